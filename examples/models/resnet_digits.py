"""A small ResNet and the images it classifies: scikit-learn's load_digits (1797 8x8 images of handwritten
digits shipped inside scikit-learn, no download; a fixed, stratified 80/20 train/validation split).

Why GroupNorm and not BatchNorm: BatchNorm's running statistics are buffers that the forward pass
changes, so a step that ftl runs again after a peer died would count its batch twice (ElasticState's
docstring), and each rank's statistics would drift apart from the others'. GroupNorm normalises each
sample on its own: nothing but the parameters changes in a step."""
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import TensorDataset

from .run import setting

SPLIT_SEED = 20240501  # the same on every worker: the same split


def settings():
    """The model's and the run's FTL_* settings."""
    return {"width": setting("FTL_WIDTH", 16), "depth": setting("FTL_DEPTH", 2), "batch": setting("FTL_BATCH", 32),
            "steps": setting("FTL_STEPS", 300), "lr": setting("FTL_LR", 0.05, float),
            "seed": setting("FTL_TRAIN_SEED", 0)}


def datasets():
    """(train, validation) TensorDatasets of 1x8x8 images, pixels scaled to [0, 1], and their labels."""
    x, y = load_digits(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x / 16.0, y, test_size=0.2, random_state=SPLIT_SEED, stratify=y)
    images = lambda a: torch.tensor(a, dtype=torch.float32).view(-1, 1, 8, 8)  # noqa: E731
    return TensorDataset(images(x_train), torch.tensor(y_train)), TensorDataset(images(x_val), torch.tensor(y_val))


class Residual(nn.Module):
    """Two 3x3 convolutions with GroupNorm, added to the input (through a strided 1x1 convolution when the
    block halves the resolution and doubles the channels)."""

    def __init__(self, channels_in, channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.norm1 = nn.GroupNorm(4, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.norm2 = nn.GroupNorm(4, channels)
        self.skip = (nn.Identity() if stride == 1 and channels_in == channels else
                     nn.Sequential(nn.Conv2d(channels_in, channels, 1, stride, bias=False), nn.GroupNorm(4, channels)))

    def forward(self, x):
        y = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(y)) + self.skip(x))


class ResNet(nn.Module):
    """A stem convolution, `depth` residual blocks at 8x8, `depth` at 4x4 with twice the channels, global
    average pooling and a linear classifier."""

    def __init__(self, width, depth, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 1, 1, bias=False), nn.GroupNorm(4, width), nn.ReLU())
        stages = [Residual(width, width, 1) for _ in range(depth)]
        stages += [Residual(width if i == 0 else 2 * width, 2 * width, 2 if i == 0 else 1) for i in range(depth)]
        self.blocks = nn.Sequential(*stages)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean(dim=(2, 3)))
