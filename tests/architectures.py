"""Tiny configs of the encoder and decoder classifier architectures the method contract matrix covers
(``tests/e2e/test_contract.py``) and stock loading checks (``tests/models/test_stock_loading.py``)."""
import transformers

CLASSIFIER_CONFIGS = {
    "bert": lambda v: transformers.BertConfig(vocab_size=v, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                                              intermediate_size=48, max_position_embeddings=130),
    "roberta": lambda v: transformers.RobertaConfig(vocab_size=v, hidden_size=32, num_hidden_layers=3,
                                                    num_attention_heads=4, intermediate_size=48,
                                                    max_position_embeddings=130, pad_token_id=0),
    "distilbert": lambda v: transformers.DistilBertConfig(vocab_size=v, dim=32, n_layers=3, n_heads=4, hidden_dim=48,
                                                          max_position_embeddings=130),
    "electra": lambda v: transformers.ElectraConfig(vocab_size=v, embedding_size=16, hidden_size=32,
                                                    num_hidden_layers=3, num_attention_heads=4, intermediate_size=48,
                                                    max_position_embeddings=130),
    "xlm-roberta": lambda v: transformers.XLMRobertaConfig(vocab_size=v, hidden_size=32, num_hidden_layers=3,
                                                           num_attention_heads=4, intermediate_size=48,
                                                           max_position_embeddings=130, pad_token_id=0),
    "llama": lambda v: transformers.LlamaConfig(vocab_size=v, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                                num_attention_heads=4, num_key_value_heads=2,
                                                max_position_embeddings=130, pad_token_id=0),
    "qwen2": lambda v: transformers.Qwen2Config(vocab_size=v, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                                num_attention_heads=4, num_key_value_heads=2,
                                                max_position_embeddings=130, pad_token_id=0),
    "gpt2": lambda v: transformers.GPT2Config(vocab_size=v, n_embd=32, n_layer=3, n_head=4, n_positions=130,
                                              pad_token_id=0),
}
