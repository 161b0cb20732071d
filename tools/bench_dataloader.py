"""Batches per second: spx.data.DataLoader vs torch.utils.data.DataLoader, same run.

Both iterate a TensorDataset of N x F float32 features and int64 labels with shuffle on and
equivalent settings; each measured epoch consumes every batch. spx batches are ``jax.Array``
on the default device (the transfer is part of the cost; the last batch is waited for), torch
batches are CPU tensors. Each cell is the best of ``--repeats`` epochs.

Usage:
    python tools/bench_dataloader.py [--samples 100000] [--features 32] [--batch-sizes 64 256]
                                     [--workers 0 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable

import jax
import numpy as np


def _epoch_rate(make_iter: Callable[[], Iterable], wait: Callable[[object], None], repeats: int):
    best = float("inf")
    n = 0
    for _ in range(repeats):
        start = time.perf_counter()
        n, batch = 0, None
        for batch in make_iter():  # noqa: B007 - the last batch is waited for below
            n += 1
        wait(batch)
        best = min(best, time.perf_counter() - start)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch
    import torch.utils.data as tdata

    import spx.data as sdata

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.samples, args.features), dtype=np.float32)
    y = rng.integers(0, 10, size=args.samples)
    spx_ds = sdata.TensorDataset(x, y)
    torch_ds = tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))

    print(
        f"TensorDataset {args.samples} x {args.features} float32 + int64 labels, shuffle=True, "
        f"jax {jax.__version__} on {jax.devices()[0].platform}, torch {torch.__version__}"
    )
    header = ("batch", 6), ("workers", 8), ("spx batch/s", 12), ("torch batch/s", 14)
    print(" ".join(f"{name:>{width}}" for name, width in header), f"{'spx/torch':>10}")
    for workers in args.workers:
        for bs in args.batch_sizes:
            spx_loader = sdata.DataLoader(
                spx_ds, batch_size=bs, shuffle=True, num_workers=workers, generator=0
            )
            torch_loader = tdata.DataLoader(
                torch_ds,
                batch_size=bs,
                shuffle=True,
                num_workers=workers,
                generator=torch.Generator().manual_seed(0),
                # spawn: forking this process, which runs JAX's threads, is unsafe.
                multiprocessing_context="spawn" if workers else None,
                persistent_workers=bool(workers),
            )
            spx_rate = _epoch_rate(
                lambda loader=spx_loader: loader, jax.block_until_ready, args.repeats
            )
            torch_rate = _epoch_rate(
                lambda loader=torch_loader: loader, lambda _: None, args.repeats
            )
            print(
                f"{bs:>6} {workers:>8} {spx_rate:>12.0f} {torch_rate:>14.0f} "
                f"{spx_rate / torch_rate:>9.2f}x"
            )


if __name__ == "__main__":
    main()
