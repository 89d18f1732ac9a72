"""A tiny Llama GGUF written with gguf's writer (Q8_0 weights, a byte-level vocabulary; ~2 s to convert):
the stand-in for the offline LLMs' real files (``tests/models/test_offline_models.py``,
``tests/e2e/test_bad_inputs_offline_model.py``)."""
import numpy as np


def write_tiny_gguf(path, layers: int = 2, hidden: int = 64, ffn: int = 128, heads: int = 4, kv: int = 2) -> None:
    """A random Llama GGUF as llama.cpp writes one: Q8_0 matrices, F32 norms, no ``output.weight`` (tied)."""
    import gguf
    from gguf.quants import quantize
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    rng, q8 = np.random.default_rng(0), gguf.GGMLQuantizationType.Q8_0
    tokens = ["<s>", "</s>", *bytes_to_unicode().values(), "Ġt", "he", "Ġthe"]
    writer = gguf.GGUFWriter(str(path), "llama")
    for add, value in (("context_length", 128), ("embedding_length", hidden), ("block_count", layers),
                       ("feed_forward_length", ffn), ("head_count", heads), ("head_count_kv", kv),
                       ("rope_dimension_count", hidden // heads), ("rope_freq_base", 1e4), ("layer_norm_rms_eps", 1e-5),
                       ("vocab_size", len(tokens)), ("tokenizer_model", "gpt2"), ("token_list", tokens),
                       ("token_types", [3, 3] + [1] * (len(tokens) - 2)), ("token_merges", ["Ġ t", "h e", "Ġt he"]),
                       ("bos_token_id", 0), ("eos_token_id", 1)):
        getattr(writer, f"add_{add}")(value)
    shapes = {"token_embd": (len(tokens), hidden), "output_norm": (hidden,)}
    for i in range(layers):
        shapes.update({f"blk.{i}.{name}": shape for name, shape in (
            ("attn_norm", (hidden,)), ("ffn_norm", (hidden,)), ("attn_q", (hidden, hidden)),
            ("attn_k", (kv * hidden // heads, hidden)), ("attn_v", (kv * hidden // heads, hidden)),
            ("attn_output", (hidden, hidden)), ("ffn_gate", (ffn, hidden)), ("ffn_up", (ffn, hidden)),
            ("ffn_down", (hidden, ffn)))})
    for name, shape in shapes.items():
        if len(shape) == 1:
            writer.add_tensor(f"{name}.weight", (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32))
        else:
            matrix = (0.05 * rng.standard_normal(shape)).astype(np.float32)
            writer.add_tensor(f"{name}.weight", quantize(matrix, q8), raw_dtype=q8)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
