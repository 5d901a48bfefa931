"""Writes calib.npy: 256 images from the digits model's *training* split (never the test images), the
calibration set for `ember convert --quantize int8 --calibrate calib.npy`. Same split as make.py.

    target/venv/bin/python tests/models/digits/calib.py
"""
from pathlib import Path

import numpy as np

from make import load_data

OUT = Path(__file__).resolve().parent

if __name__ == "__main__":
    xtr, _, _, _ = load_data()
    calib = xtr[:256].astype(np.float32)
    np.save(OUT / "calib.npy", calib)
    print(f"calib.npy: {calib.shape} training images")
