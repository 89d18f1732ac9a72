"""Uneven pruned models round-trip through save/load, also in a fresh process; writes are atomic."""
import copy
import json
import subprocess
import sys

import pytest
import torch
from conftest import batch, tiny_classifier

from forgetless.errors import ForgetlessError
from forgetless.fsutil import atomic_directory
from forgetless.models import surgery
from forgetless.models.io import load_model, save_model


def pruned(arch):
    model = tiny_classifier(arch)
    surgery.prune_heads(model, {("encoder", 0, "self"): [0, 2], ("encoder", 1, "self"): []})
    surgery.prune_ffn(model, {("encoder", 2, "ffn"): [1, 2, 3]})
    surgery.drop_layers(model, "encoder", [0, 2])
    return model


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert"])
def test_save_load_same_process(tmp_path, arch):
    model, inputs = pruned(arch), batch()
    save_model(model, tmp_path / "m")
    loaded, tokenizer = load_model(tmp_path / "m")
    assert tokenizer is None
    assert surgery.model_shape(loaded) == surgery.model_shape(model)
    with torch.no_grad():
        torch.testing.assert_close(loaded(**inputs).logits, model(**inputs).logits, atol=0, rtol=0)


def test_save_load_fresh_process(tmp_path):
    model, inputs = pruned("bert"), batch()
    save_model(model, tmp_path / "m")
    with torch.no_grad():
        expected = model(**inputs).logits
    torch.save(inputs, tmp_path / "inputs.pt")  # our own test file
    code = (
        "import sys, torch, json; from forgetless.models.io import load_model\n"
        f"m, _ = load_model({str(tmp_path / 'm')!r})\n"
        f"x = torch.load({str(tmp_path / 'inputs.pt')!r}, weights_only=True)\n"
        "print(json.dumps(m(**x).logits.tolist()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    torch.testing.assert_close(torch.tensor(json.loads(out.strip().splitlines()[-1])), expected, atol=1e-6, rtol=0)


def test_manifest_and_weights_checked(tmp_path):
    save_model(tiny_classifier("bert"), tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "forgetless.json").read_text())
    manifest["shape"]["ffn"][0][-1] = 5  # lie about a width
    (tmp_path / "m" / "forgetless.json").write_text(json.dumps(manifest))
    with pytest.raises(Exception):
        load_model(tmp_path / "m")
    (tmp_path / "m" / "forgetless.json").write_text('{"format": "other"}')
    with pytest.raises(ForgetlessError, match="unknown format"):
        load_model(tmp_path / "m")
    manifest["model_class"] = "os.system"
    manifest["shape"]["ffn"][0][-1] = 37
    (tmp_path / "m" / "forgetless.json").write_text(json.dumps(manifest))
    with pytest.raises(ForgetlessError, match="not a transformers model class"):
        load_model(tmp_path / "m")


def test_interrupted_write_leaves_nothing(tmp_path):
    target = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as tmp:
            (tmp / "model.safetensors").write_bytes(b"partial")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_overwrite_keeps_old_until_complete(tmp_path):
    model = tiny_classifier("bert")
    save_model(model, tmp_path / "m")
    smaller = surgery.drop_layers(copy.deepcopy(model), "encoder", [0])
    save_model(smaller, tmp_path / "m")
    loaded, _ = load_model(tmp_path / "m")
    assert surgery.model_shape(loaded)["layers"] == {"encoder": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_written_files_and_folders_get_the_usual_modes(tmp_path):
    """Atomic writes go through temporary files (0600) and folders (0700): the result has the mode a
    plain open / mkdir gives under the umask (0644 / 0755 under 022), so teammates can read it."""
    import os
    import stat

    from forgetless.fsutil import atomic_directory, atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "report.md", "x")
        with atomic_directory(tmp_path / "model") as folder:
            (folder / "weights").write_text("w")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "model").stat().st_mode) == 0o755
