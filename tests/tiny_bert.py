"""A tiny BERT classifier and a word-level tokenizer covering the synthetic task's vocabulary, shared by
the objective, difficulty, pipeline and sweep tests."""
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from forgetless.data import synthetic

# every word the synthetic task's generator can emit
WORDS = sorted(set(synthetic.NOUNS + synthetic.HYPERNYMS + synthetic.INTRANSITIVE + synthetic.ADJECTIVES
                   + synthetic.CERTAIN + synthetic.UNCERTAIN + ["the", "was", "by", "who", "and", "if", ","]
                   + [form for pair in synthetic.VERBS for form in pair]
                   + [w for suffix in synthetic.SUFFIXES for w in suffix.split()]))


def tiny_tokenizer(folder: Path | None = None) -> BertTokenizerFast:
    """A word-level BERT tokenizer covering the synthetic task's vocabulary (no [UNK] there)."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS))
    return BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)})


def tiny_bert(tokenizer, seed: int = 0) -> BertForSequenceClassification:
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, num_labels=2)
    return BertForSequenceClassification(config).eval()
