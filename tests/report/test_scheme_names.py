"""What a quantized run's pages call it (issue 54): a ``--scheme`` run is named by the scheme and the
format its methods ran, not "rtn 8-bit"; a card without a scheme (and an older card, whose ``run`` has
no ``scheme`` key) keeps its method chain; the quantized layer count is the quantizing method's own
(a Mixtral expert's ``gate_up_proj`` once, though the file stores it as ``w1`` and ``w3``)."""
from forgetless.report.model_card_sections import size_summary
from forgetless.report.naming import card_chain, card_title, quantized_layer_count
from forgetless.schemes import SCHEMES
from typed_cards import typed_card

FP8_DYNAMIC = {"bits": 8, "group_size": -1, "weight_type": "fp8", "activations": "fp8-token", "asymmetric": False}


def card(method: dict, then: list | None = None, scheme: str | None = None, **extra) -> dict:
    run = {"model": "tiny-llama"} if scheme is None else {"model": "tiny-llama", "scheme": scheme}
    return {"task": {"name": "sst2"}, "method": {**method, "then": then or []}, "run": run, **extra}


def test_a_scheme_run_is_named_by_its_scheme_and_what_ran():
    fp8 = card({"name": "rtn", "config": FP8_DYNAMIC}, scheme="FP8-DYNAMIC")
    assert card_title(typed_card(fp8)) == "sst2 · FP8-DYNAMIC (rtn fp8 weights per row, fp8 inputs per token)"
    w8a8 = card({"name": "smoothquant", "config": {"alpha": 0.8}},
                [{"name": "gptq", "config": {"bits": 8, "group_size": -1, "weight_type": "int", "activations": "int8-token"}}],
                scheme="W8A8-INT8")
    assert card_chain(typed_card(w8a8)) == "W8A8-INT8 (smoothquant + gptq int8 weights, per row, int8 inputs per token)"
    awq = card({"name": "awq", "config": {"bits": 4, "group_size": 128, "weight_type": "int", "activations": "none",
                                          "asymmetric": True}}, scheme="W4A16-AWQ")
    assert card_chain(typed_card(awq)) == "W4A16-AWQ (awq int4 weights, groups of 128, asymmetric)"
    assert set(SCHEMES) >= {"FP8-DYNAMIC", "W8A8-INT8", "W4A16-AWQ"}


def test_without_a_scheme_the_chain_names_the_methods_and_fp8_is_not_8_bit():
    assert card_chain(typed_card(card({"name": "rtn", "config": FP8_DYNAMIC}))) == "rtn fp8"
    old = card({"name": "gptq", "config": {"bits": 4, "group_size": 128}})  # a card written before: no run.scheme
    assert "scheme" not in old["run"] and card_title(typed_card(old)) == "sst2 · gptq 4-bit"


def test_one_quantized_layer_count_on_every_page():
    """36 linears quantized (24 expert projections), 48 compressed-tensors modules in the file."""
    stored = {"quantized": {"layers": 48, "weights": 184_320, "bytes": 139_008, "bits_per_weight": 6.033},
              "overall": {"parameters": 198_464, "bytes": 200_000, "bits_per_parameter": 8.06}}
    params = {"base": {"total": 198_464}, "compressed": {"total": 198_464}, "ratio": 1.0, "stored": stored}
    moe = card({"name": "gptq", "config": {"bits": 4, "group_size": 16}, "sections": {"quantization": {"layers": 36}}},
               params=params)
    assert quantized_layer_count(typed_card(moe)) == 36
    assert size_summary(typed_card(moe))["bits per weight in the quantized layers"] == "6.033 (36 layers)"
    older = card({"name": "gptq", "config": {"bits": 4, "group_size": 16}}, params=params)  # no section: the file's
    assert quantized_layer_count(typed_card(older)) == 48


def test_a_new_format_is_named_by_its_own_words_without_report_edits():
    """A format registered after the report was written (a scratch NVFP4) is named by its ``--weight-type``,
    not taken for an integer grid ("rtn 4-bit", as 0ba50b8 named it): the words come from the torch-free
    ``QuantFormat``, and its deployment note is not the integer W4A16 one."""
    from forgetless.report.model_card_sections import deployment_notes

    nvfp4 = {"bits": 4, "group_size": 16, "weight_type": "nvfp4", "activations": "none", "asymmetric": False}
    typed = typed_card(card({"name": "rtn", "config": nvfp4}))
    assert card_title(typed) == "sst2 · rtn nvfp4"
    assert card_chain(typed_card(card({"name": "rtn", "config": nvfp4}, scheme="NVFP4"))) == \
        "NVFP4 (rtn nvfp4 weights groups of 16)"
    assert deployment_notes(typed)[0].startswith("rtn nvfp4 (compressed-tensors nvfp4 weights, inputs none)")
