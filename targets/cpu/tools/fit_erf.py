#!/usr/bin/env python3
"""Fits the f32 polynomial coefficients of `erf` in `targets/cpu/src/simd/math.rs` (needs mpmath only).

erf(x) for |x| < 0.875 is x * P(x^2) (P's constant term 2/sqrt(pi) in f32); above, 1 - exp(-x^2) * Q(1/x - MID), Q approximating
erfc(x) exp(x^2). Each polynomial minimizes relative error (weighted least squares on Chebyshev nodes)
with its coefficients rounded to f32 one at a time from the constant term up, the others refitted after
each rounding. Prints the Rust constants; rerunning gives the same ones.
"""
import struct

import mpmath as mp

mp.mp.dps = 50


def f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def literal(v):
    """The shortest decimal that reads back as the f32 `v` (what Rust's `{}` prints)."""
    for digits in range(1, 10):
        text = "%.*g" % (digits, v)
        if f32(float(text)) == v:
            return text if ("." in text or "e" in text) else text + ".0"
    raise ValueError(v)


def fit_f32(f, a, b, degree, first=None, nodes=300):
    xs = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (i + mp.mpf(1) / 2) / nodes) for i in range(nodes)]
    ys = [f(x) for x in xs]
    fixed = [] if first is None else [mp.mpf(f32(first))]
    while len(fixed) <= degree:
        free = range(len(fixed), degree + 1)
        a_mat = mp.matrix(nodes, len(free))
        rhs = mp.matrix(nodes, 1)
        for i, (x, y) in enumerate(zip(xs, ys)):
            rhs[i] = (y - sum(c * x**j for j, c in enumerate(fixed))) / y
            for col, j in enumerate(free):
                a_mat[i, col] = x**j / y
        fixed.append(mp.mpf(f32(mp.qr_solve(a_mat, rhs)[0][0])))
    worst = max(
        abs(sum(c * x**j for j, c in enumerate(fixed)) / f(x) - 1)
        for x in [a + (b - a) * i / 3000 for i in range(3001)]
    )
    return [f32(c) for c in fixed], worst


SPLIT = mp.mpf("0.875")


def erf_over_x(z):
    if z == 0:
        return 2 / mp.sqrt(mp.pi)
    x = mp.sqrt(z)
    return mp.erf(x) / x


LO, HI = mp.mpf(1) / 4, 1 / SPLIT
MID = mp.mpf(f32((LO + HI) / 2))


def scaled_erfc(u):
    x = 1 / (u + MID)
    return mp.erfc(x) * mp.exp(x * x)


# The constant term is 2/sqrt(pi) rounded to f32: erf(x) ~ x 2/sqrt(pi) near 0, where Gelu spends its time.
small, err_small = fit_f32(erf_over_x, mp.mpf(0), SPLIT**2, 5, first=2 / mp.sqrt(mp.pi))
large, err_large = fit_f32(scaled_erfc, LO - MID, HI - MID, 10)
print(f"// P: relative error {mp.nstr(err_small, 2)} in exact arithmetic")
print("const ERF_SMALL: [f32; %d] = [%s];" % (len(small), ", ".join(literal(c) for c in small)))
print(f"const ERFC_MID: f32 = {literal(float(MID))};")
print(f"// Q: relative error {mp.nstr(err_large, 2)} in exact arithmetic")
print("const ERFC_LARGE: [f32; %d] = [%s];" % (len(large), ", ".join(literal(c) for c in large)))
