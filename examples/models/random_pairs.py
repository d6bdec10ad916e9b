"""The dataset of the loop examples (torch_loop*, lightning_loop*), as the torchrun tutorial keeps its own in
a module of its own: random (input, target) pairs, the same on every worker."""
import torch
from torch.utils.data import Dataset


class RandomPairs(Dataset):
    """size (input, target) pairs of random numbers, the same on every worker."""

    def __init__(self, size):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.rand(size, 20, generator=g), torch.rand(size, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]
