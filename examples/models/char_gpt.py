"""A small GPT (decoder-only transformer: causal self-attention, pre-LayerNorm blocks) and the text it
learns character by character.

The text: the licence texts of Debian's base-files package (/usr/share/common-licenses: GPL, LGPL,
Apache, MPL, GFDL, Artistic, BSD, CC0; ~200 kB once the symlinks are skipped), on every Debian and
Ubuntu machine and CI runner, no download. Where that directory is missing, the licence files that the
installed PyPI packages ship in their .dist-info directories (torch's alone is ~90 kB) stand in, and the
program says so on stderr. Every worker must read the same text: the vocabulary and the split come from it.
The last 10% is the validation split; samples are windows of FTL_CONTEXT characters (every half window
in the training split), each with the next character after every position as its targets."""
import glob
import importlib.metadata
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import TensorDataset

from .run import setting

CORPUS_DIR = "/usr/share/common-licenses"
VALIDATION_SHARE = 0.1


def settings():
    """The model's and the run's FTL_* settings, with defaults that train a useful amount in about a
    minute on one core per worker."""
    return {"width": setting("FTL_WIDTH", 64), "depth": setting("FTL_DEPTH", 2), "heads": 4,
            "context": setting("FTL_CONTEXT", 64), "batch": setting("FTL_BATCH", 16),
            "steps": setting("FTL_STEPS", 1500), "lr": setting("FTL_LR", 0.003, float),
            "seed": setting("FTL_TRAIN_SEED", 0)}


def corpus():
    """The training text, and where it came from."""
    paths = sorted(p for p in glob.glob(os.path.join(CORPUS_DIR, "*")) if not os.path.islink(p))
    if paths:
        return "".join(open(p, encoding="utf-8", errors="replace").read() for p in paths), CORPUS_DIR
    print(f"char_gpt: no {CORPUS_DIR} (Debian's base-files): training on the installed packages' licence "
          "files instead", file=sys.stderr)
    files = sorted((str(f), f) for d in ("torch", "numpy", "scikit-learn") for f in _licence_files(d))
    return "".join(f.read_text() for _, f in files), "the licence files of torch, numpy and scikit-learn"


def _licence_files(distribution):
    try:
        return [f for f in importlib.metadata.distribution(distribution).files or ()
                if "LICENSE" in f.name.upper() or "COPYING" in f.name.upper()]
    except importlib.metadata.PackageNotFoundError:
        return []


def datasets(context):
    """(train, validation, vocabulary size): TensorDatasets of (characters, next characters) windows."""
    text, _ = corpus()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text])
    cut = int(len(ids) * (1 - VALIDATION_SHARE))
    return _windows(ids[:cut], context, context // 2), _windows(ids[cut:], context, context), len(vocab)


def _windows(ids, context, stride):
    w = ids.unfold(0, context + 1, stride)
    return TensorDataset(w[:, :-1].contiguous(), w[:, 1:].contiguous())


class SelfAttention(nn.Module):
    """Multi-head causal self-attention: each position attends to itself and the positions before it."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """Attention, then a position-wise MLP, each added to the residual stream after a LayerNorm."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1, self.attention = nn.LayerNorm(width), SelfAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class CharGPT(nn.Module):
    """Token and position embeddings, `depth` blocks, a final LayerNorm and the logits of the next
    character at every position. No dropout: every rank computes the same function."""

    def __init__(self, vocab, width, depth, heads, context):
        super().__init__()
        self.token = nn.Embedding(vocab, width)
        self.position = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*(Block(width, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        x = self.token(ids) + self.position(torch.arange(ids.shape[1]))
        return self.head(self.norm(self.blocks(x)))
