"""``forgetless export``: a saved model to ONNX (checked against PyTorch) and / or the Hugging Face
hub; the checks of ``compress``'s ``--push-to-hub`` and ``--report-to``.
Light at import time: the exporter is imported when the command runs."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

EXPORT_EXAMPLE = ("examples:\n  forgetless export runs/heads/model --format onnx --out runs/heads/onnx\n"
                  "  forgetless export runs/heads/model --push-to-hub me/minilm-heads-30")
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def add_export_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="export a saved model to ONNX (checked against PyTorch) and / or push it to "
                                      "the Hugging Face hub", description="Export a model folder written by "
                                      "forgetless (encoder classifiers and encoder-decoders) to ONNX with dynamic "
                                      "batch and sequence axes; every graph is run with onnxruntime and compared "
                                      "with PyTorch.", epilog=EXPORT_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_path", help="a model folder written by forgetless (e.g. OUT/model)")
    p.add_argument("--format", choices=["onnx"], help="export format (onnx)")
    p.add_argument("--out", help="output folder of the export, new or empty (default: MODEL_PATH/../onnx)")
    p.add_argument("--overwrite", action="store_true", help="replace the output of an earlier export in --out")
    p.add_argument("--opset", type=int, default=18, help="ONNX opset")
    p.add_argument("--atol", type=float, default=1e-4, help="largest accepted |ONNX − PyTorch| difference")
    p.add_argument("--push-to-hub", metavar="REPO", help="upload the model folder to this hub repository")
    return p


def check_push_target(repo_id: str | None) -> None:
    """Fail before any work when ``--push-to-hub`` cannot succeed (malformed id, offline mode)."""
    from ..data.hub import hub_offline
    from ..errors import ConfigError, ForgetlessError

    if repo_id is None:
        return
    if not _REPO_ID.match(repo_id):
        raise ConfigError(f"--push-to-hub {repo_id!r}: expected a hub repository id like 'user/name'")
    if hub_offline():
        raise ForgetlessError(f"--push-to-hub {repo_id}: HF_HUB_OFFLINE is set, nothing can be uploaded "
                              "(unset it, or drop --push-to-hub)")


def check_report_to(value: str | None) -> None:
    """``--report-to``: known Trainer integrations that are installed, or a one-line error."""
    from ..errors import ConfigError

    names = [x.strip() for x in (value or "none").split(",") if x.strip()]
    if names in ([], ["none"]):
        return
    from transformers.integrations import get_available_reporting_integrations
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    for name in names:
        if name not in INTEGRATION_TO_CALLBACK:
            raise ConfigError(f"--report-to {name!r}: unknown; known: none, {', '.join(sorted(INTEGRATION_TO_CALLBACK))}")
        if name not in get_available_reporting_integrations():
            raise ConfigError(f"--report-to {name!r}: the integration is not installed (pip install {name})")


def push_saved(model_dir: Path, repo_id: str | None) -> None:
    if repo_id is None:
        return
    from ..export import push_to_hub

    print(f"pushed {model_dir} to {repo_id}: {push_to_hub(model_dir, repo_id)}")


def cmd_export(args, owners) -> int:
    from ..errors import ConfigError

    if args.format is None and args.push_to_hub is None:
        raise ConfigError("export: nothing to do; give --format onnx and / or --push-to-hub REPO")
    check_push_target(args.push_to_hub)
    model_dir = Path(args.model_path)
    if args.format == "onnx":
        from ..export import export_onnx

        out = Path(args.out) if args.out else model_dir.parent / "onnx"
        result = export_onnx(model_dir, out, opset=args.opset, atol=args.atol, overwrite=args.overwrite)
        print(f"exported {model_dir} ({result['kind']}) to {out}: " + ", ".join(
            f"{name} {Path(path).name}" for name, path in result["files"].items()))
        print("verified with onnxruntime against PyTorch on 2 batches of different shapes: max |diff| "
              + ", ".join(f"{graph} {diff:.2e}" for graph, diff in result["per_graph"].items())
              + f" (tolerance {args.atol:g})")
    push_saved(model_dir, args.push_to_hub)
    return 0
