"""Numpy reference of the constraint force algorithm with the paper's global matrices.

Numpy reference of the constraint force algorithm, general form, literally with the paper's global matrices
(Liu, Hu & Zhang 2016, [LHZ eqs 10-29]).  For the tests: its inputs are per-body matrices that the caller builds
independently (e.g. from pinocchio), so it checks the generated kernels without sharing their code.

Conventions: spatial vectors (linear; angular) at each body's joint point in the body's frame (the
kernel's order; the paper writes angular first, which permutes every block alike and changes nothing).
  X[j]   6x6 motion transform parent frame -> body j frame (P-hat^T with the rotation C of [LHZ eqs 1-2])
  I[j]   6x6 mass matrix of body j about its joint point [LHZ eq 3]
  H[j]   6 x n_j joint projection with H^T H = U (below [LHZ eq 1])
  F_T    generalized forces minus the bias b(q, u) [LHZ eq 4], per joint
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np


def complement(H: np.ndarray) -> np.ndarray:
    """W with W^T W = U and W^T H = 0 [LHZ eq 5]: the orthonormal complement of the columns of H (SVD)."""
    if H.shape[1] == 0:
        return np.eye(6)
    u, s, _ = np.linalg.svd(H, full_matrices=True)
    return u[:, H.shape[1]:]


def assemble_P(parent: Sequence[int], X: Sequence[np.ndarray]) -> np.ndarray:
    """P of [LHZ eq 16], assembled by the rules of Sect. 2.3.

    P of [LHZ eq 16] by the rules of Sect. 2.3 [LHZ eqs 10, 13, 17-21]: unit diagonal blocks, and in the row of
    every body the blocks -X_c^T (= -P-hat_{j,o(j_m)} C) of its outboard bodies, so (P F)_j = F_j - sum_c X_c^T F_c."""
    n = len(parent)
    P = np.eye(6 * n)
    for c, j in enumerate(parent):
        if j >= 0:
            P[6 * j:6 * j + 6, 6 * c:6 * c + 6] = -X[c].T
    return P


def block_diag(blocks: List[np.ndarray]) -> np.ndarray:
    """The block-diagonal matrix of `blocks`."""
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out, r, c = np.zeros((rows, cols)), 0, 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def general_form(parent, X, I, H, F_T, W: Optional[List[np.ndarray]] = None):
    """Constraint forces and accelerations of the general form.

    Returns (Qdot, F_S, F): Qdot by [LHZ eq 28], F_S from A F_S = -B F_T [LHZ eqs 26-27], F = H F_T + W F_S ([LHZ eq 22], the
    joint forces less the bias forces), with A, B built from the assembled P, H, W, I [LHZ eq 26]."""
    W = W if W is not None else [complement(h) for h in H]
    P, Hb, Wb, Ib = assemble_P(parent, X), block_diag(list(H)), block_diag(W), block_diag(list(I))
    Iinv_P = np.linalg.solve(Ib, P)
    A = Wb.T @ P.T @ Iinv_P @ Wb                      # [LHZ eq 26]
    B = Wb.T @ P.T @ Iinv_P @ Hb
    F_S = np.linalg.solve(A, -B @ F_T) if A.size else np.zeros(0)   # [LHZ eq 27]
    F = Hb @ F_T + Wb @ F_S                            # [LHZ eq 22]
    Qdot = Hb.T @ P.T @ (Iinv_P @ F)                   # [LHZ eq 28]
    return Qdot, F_S, F.reshape(-1, 6)
