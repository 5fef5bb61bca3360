"""Exports scikit-learn's bundled 8x8 handwritten digits (1797 images, no download) as .npy files.

  train_x.npy f32[1437,1,8,8] (pixel values 0..16 scaled to 0..1), train_y.npy i64[1437]
  test_x.npy  f32[360,1,8,8],                                         test_y.npy  i64[360]
The split is stratified and fixed (random_state=0).
"""
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

out = sys.argv[1] if len(sys.argv) > 1 else "."
digits = load_digits()
x = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
y = digits.target.astype(np.int64)
xtr, xte, ytr, yte = train_test_split(x, y, test_size=360, stratify=y, random_state=0)
for name, a in [("train_x", xtr), ("train_y", ytr), ("test_x", xte), ("test_y", yte)]:
    np.save(f"{out}/{name}.npy", np.ascontiguousarray(a))
print(f"train {xtr.shape[0]} samples, test {xte.shape[0]} samples -> {out}/")
