"""A user's module for the compile-report command line test."""
import torch


def breaks_once(x, w):
    y = x @ w
    if y.sum().item() > 0:
        y = y + 1
    return torch.relu(y)
