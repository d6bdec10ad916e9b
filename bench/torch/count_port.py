"""How many lines a port to ftl changes: each example against its plain DDP twin (examples/X.py and
X_ddp.py), counting the non-blank code lines below the module docstring that a unified diff removes
and adds. One JSON line per example. Targets: at most 15 changed lines for the real-model examples in step
mode (issue 25); at most 6 removed and 6 added for torch_loop, the torchrun tutorial's kind of program in
loop mode, its loop untouched (issue 43); lightning_loop, a Lightning program on ElasticStrategy, against the
same program on Lightning's own DDP strategy; torch_char_gpt_hsdp, FSDP2 HSDP on ftl, against the same
program under torchrun on init_device_mesh.

    python3 bench/torch/count_port.py"""
import difflib
import json
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def code_lines(path):
    text = path.read_text()
    end = text.index('"""', 3) + 3 if text.startswith('"""') else 0
    return [line for line in text[end:].splitlines() if line.strip()]


def main():
    twins = {name: f"{name}_ddp" for name in ("torch_loop", "torch_char_gpt", "torch_resnet_digits", "lightning_loop")}
    twins["torch_char_gpt_hsdp"] = "torch_char_gpt_hsdp_torchrun"  # FSDP2 over a 2-D mesh under torchrun
    for name, twin in twins.items():
        ddp, ftl = code_lines(EXAMPLES / f"{twin}.py"), code_lines(EXAMPLES / f"{name}.py")
        diff = list(difflib.unified_diff(ddp, ftl, lineterm="", n=0))
        removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
        added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
        print(json.dumps({"bench": "port_lines", "example": name, "ddp_lines": len(ddp), "ftl_lines": len(ftl),
                          "removed": removed, "added": added}))


if __name__ == "__main__":
    main()
