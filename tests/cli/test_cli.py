"""The command line: help, listings, and clear errors that lose nothing."""
import pytest

from forgetless.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shows_each_method_with_its_model_kinds_and_the_models_by_name(capsys):
    from forgetless.config import MODELS
    from forgetless.registry import METHODS

    code, out, _ = run(capsys, "list")
    assert code == 0 and "mnli-small" in out and "bert" in out
    assert "  wanda            classifier/causal-lm; classification; text\n" in out  # LLM methods say so
    for name in METHODS.names():  # one line per method, read from its config
        config = METHODS.config_class(name)
        assert f"  {name:<16} {'/'.join(config.model_kinds)}; {'/'.join(config.task_types)}; {config.calibration}" \
            in out
    for name in MODELS:
        assert f"\n  {name} " in out


def test_models_by_name_are_those_the_loaders_know():
    from forgetless.config import MODELS
    from forgetless.models.loading import HUB_IDS, SHORT_NAMES
    from forgetless.models.tiny import TINY_MODELS

    assert set(MODELS) == set(SHORT_NAMES) | set(HUB_IDS) | set(TINY_MODELS)


def test_help_of_one_method_shows_the_common_options_and_its_own_only(capsys):
    def helped(*argv):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--help"])
        assert exit_info.value.code == 0
        return " ".join(capsys.readouterr().out.split())

    everything, wanda = helped("compress"), helped("compress", "--method", "wanda")
    assert "--sparsity" in wanda and "--pattern" in wanda and "--calibration-examples" in wanda
    assert "share of zero weights in every output row" in wanda and "magnitude:" not in wanda
    for other in ("--layers", "--ratio", "--decoder-layers", "--bits", "--dtype", "--objective-lam"):
        assert f"[{other} " in everything and f"[{other} " not in wanda, other  # in the usage line
    for common in ("--model", "--task", "--epochs", "--out", "--calibration-data", "--bench-repeats"):
        assert f"[{common} " in wanda
    assert len(wanda) < len(everything) / 2
    rmc = helped("compress", "--method", "magnitude", "--objective=rmc")
    assert "[--objective-alpha " in rmc and "[--objective-gamma " not in rmc and "[--pattern " not in rmc


def test_compress_help_lists_generated_method_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["compress", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exit_info.value.code == 0
    assert "magnitude: final share of zero weights among prunable ones (default 0.4)" in out
    assert "heads: share of all attention heads pruned (default 0.2)" in out and "(default 0.6)" in out
    assert "--layers" in out and "--data-dir" in out and "--weight-decay" in out and "--warmup-ratio" in out


@pytest.mark.parametrize("argv, message", [
    (["compress", "--method", "magnitud"], "unknown compression method 'magnitud'.*Did you mean 'magnitude'"),
    (["compress", "--method", "truncate", "--sparsity", "0.4"],
     "--sparsity does not apply to method truncate \\(it belongs to cofi, magnitude, sparsegpt, wanda\\)"),
    (["compress", "--method", "magnitude", "--sparsity", "1.5"], r"--sparsity: 1.5 is out of range; valid: >= 0 and <= 1"),
    (["compress", "--objective", "nope"], "unknown objective 'nope'"),
    (["compress", "--task", "mnli-small", "--data-dir", "/nonexistent"], "--data-dir /nonexistent: the data folder does not exist"),
    (["compress", "--task", "files"], "needs --train FILE and --dev FILE"),
    (["compress", "--task", "nope"], "unknown task 'nope'"),
    (["compress", "--model", "./no/such/folder"], "does not exist"),
])
def test_bad_input_is_one_clear_error(capsys, tmp_path, argv, message):
    import re

    code, _, err = run(capsys, *argv, "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 2
    assert re.search(message, err), err
    assert not (tmp_path / "out" / "model").exists()


def test_sweep_profile_and_alias_help(capsys):
    for command in ("sweep", "profile", "compress-seq2seq"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
    out = capsys.readouterr().out
    assert "--objectives" in out and "--seq-lengths" in out and "--decoder-layers" in out


def test_evaluate_offers_only_options_it_honours(capsys):
    """--until-interval stops on the change between two models scored together: evaluate scores one model, so
    its help does not offer it (compress's does); the LLM options evaluate honours stay."""
    for command in ("evaluate", "compress"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert ("--until-interval" in text) == (command == "compress") and "--perplexity-windows" in text, command


def test_one_vocabulary_and_strict_booleans(capsys, tmp_path):
    code, _, err = run(capsys, "compress", "--method", "heads", "--freeze-embeddings", "ture", "--out", str(tmp_path / "o"))
    assert code == 2 and "--freeze-embeddings: expected true or false, got 'ture'" in err
    code, _, err = run(capsys, "compress", "--method", "truncate", "--selection", "uniform", "--out", str(tmp_path / "o"))
    assert code == 2 and "--selection uniform: not one of first, last, spread, stride" in err and not (tmp_path / "o").exists()
    code, _, err = run(capsys, "compress", "--method", "heads", "--objective", "nash-distil", "--out", str(tmp_path / "o"))
    assert code == 2 and "does not apply to a classifier model" in err and not (tmp_path / "o").exists()


def test_sigterm_stops_with_a_resume_hint_and_exit_130(tmp_path):
    """A scheduler's SIGTERM (or Ctrl-C) mid-run: exit 130 and one line saying a rerun resumes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "FORGETLESS_CACHE": str(tmp_path / "cache")}
    argv = ["compress", "--model", "tiny-bert", "--layers", "1", "--train-size", "400", "--epochs", "50",
            "--batch-size", "4", "--max-length", "32", "--no-progress", "--out", str(tmp_path / "run")]
    proc = subprocess.Popen([sys.executable, "-m", "forgetless", *argv], stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if "fine-tuning the teacher" in line or not line:
            break
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    err = "".join(lines) + proc.stderr.read()
    assert proc.wait(timeout=60) == 130, err
    assert "forgetless: interrupted; rerun the same command to resume from the last complete checkpoint" in err
    assert "Traceback" not in err


def test_bench_prints_a_table_with_the_speedup_interval_and_json_on_request(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["compress", "--model", "tiny-bert", "--layers", "1", "--train-size", "16", "--eval-size", "8",
                 "--epochs", "1", "--no-progress", "--bench-repeats", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    argv = ["bench", str(out / "model"), "--base", "tiny-bert", "--repeats", "3", "--seq-len", "8", "--batch-size", "2"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "95% interval" in table and table.count("x  [") == 2 and "3 interleaved repeats" in table
    assert main(argv + ["--json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert set(result["speedup"]) == {"latency", "throughput"} and result["speedup"]["latency"]["n_base"] == 3
