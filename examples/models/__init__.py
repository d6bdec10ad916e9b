"""What the example programs share, so that each program holds only its training loop: the models and
their data (char_gpt, resnet_digits), FTL_* settings, stop signals and the JSON lines (run).
The ftl programs (examples/torch_*.py) and their plain DDP twins (examples/ddp/) import the same code,
so `diff -u` between the twins shows only what ftl changes."""
