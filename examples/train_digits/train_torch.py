"""The same CNN, initial weights, data, optimizer (Adam), batch size and epochs in PyTorch eager,
for comparison with `aicc train`. Runs with Debian's python3-torch: /usr/bin/python3 train_torch.py DIR.
Prints the loss per epoch, the test accuracy and the mean time per training step (forward, loss,
backward and optimizer update of one batch)."""
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

d = sys.argv[1] if len(sys.argv) > 1 else "."
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
batch = 32
lr = float(sys.argv[3]) if len(sys.argv) > 3 else 3e-3
torch.manual_seed(0)
xtr, ytr = torch.from_numpy(np.load(f"{d}/train_x.npy")), torch.from_numpy(np.load(f"{d}/train_y.npy"))
xte, yte = torch.from_numpy(np.load(f"{d}/test_x.npy")), torch.from_numpy(np.load(f"{d}/test_y.npy"))
w = {k: torch.nn.Parameter(torch.from_numpy(v.copy())) for k, v in np.load(f"{d}/init_weights.npz").items()}


def forward(x):
    h = F.max_pool2d(F.relu(F.conv2d(x, w["conv1.weight"], w["conv1.bias"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w["conv2.weight"], w["conv2.bias"], padding=1)), 2)
    h = F.relu(F.linear(h.flatten(1), w["fc1.weight"], w["fc1.bias"]))
    return F.linear(h, w["fc2.weight"], w["fc2.bias"])


opt = torch.optim.Adam(w.values(), lr=lr)
rng = np.random.default_rng(0)
step_time, steps = 0.0, 0
for epoch in range(1, epochs + 1):
    order = rng.permutation(len(xtr))
    total, count = 0.0, 0
    for b in range(0, len(order) - batch + 1, batch):  # the last partial batch is dropped, as in aicc
        idx = torch.from_numpy(order[b:b + batch])
        x, y = xtr[idx], ytr[idx]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
        step_time += time.perf_counter() - t0
        steps += 1
        total, count = total + loss.item(), count + 1
    with torch.no_grad():
        acc = (forward(xte).argmax(1) == yte).float().mean().item()
    print(f"epoch {epoch:3d}: train loss {total / count:.4f}, test accuracy {100 * acc:.2f}%")
print(f"{steps} steps of batch {batch}: {1e3 * step_time / steps:.3f} ms per training step (mean), "
      f"torch {torch.__version__}, {torch.get_num_threads()} threads")
