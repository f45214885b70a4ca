"""The canonical engine of T-Cal: residual vectors ``U = e_c - P`` grouped by the cells of a partition
(SPEC 4.1, 4.3), under the y-bootstrap (``c* ~ Categorical(P)``) and the consistency null."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from calibcli.tcal.engine import CHUNK_BYTES


class GroupVectorEngine:
    """Residual vectors ``e_c - P`` grouped by cell ids: canonical data, and the consistency null.

    Binary data go through here with ``P = [1 - z, z]`` and ``scale = 1/2`` (the scalar statistic is
    half the K = 2 vector one).
    """

    def __init__(self, P: np.ndarray, c: np.ndarray, w: np.ndarray | None, groups: list[np.ndarray], scale: float):
        self.P = P
        self.c = c
        self.w = w
        self.n, self.K = P.shape
        self.scale = scale
        self.total_weight = float(self.n if w is None else w.sum())
        self.cumP = np.cumsum(P, axis=1)[:, :-1]
        self.sqnorm = np.einsum("ij,ij->i", P, P)
        self.nonempty: list[int] = []
        self.level_of: list[int] = []
        self.parts: list[np.ndarray] = []
        for g in groups:
            G = int(g.max()) + 1
            self.nonempty.append(G)
            if self.parts and G == int(self.parts[-1].max()) + 1 and np.array_equal(g, self.parts[-1]):
                self.level_of.append(len(self.parts) - 1)
                continue
            self.parts.append(g)
            self.level_of.append(len(self.parts) - 1)
        # y-bootstrap: per partition, what does not depend on the drawn classes. Points alone in their
        # cell contribute 0 and are left out; the rest are renumbered by cell (``cell``, ``n_cells``).
        w = np.ones(self.n) if w is None else w
        self.fixed = []
        for g in self.parts:
            counts = np.bincount(g)
            sel = np.flatnonzero(counts[g] >= 2)
            _, cell = np.unique(g[sel], return_inverse=True)
            n_cells = int(cell.max()) + 1 if len(sel) else 0
            wsum = np.bincount(cell, weights=w[sel], minlength=n_cells)
            wP = np.stack(
                [np.bincount(cell, weights=w[sel] * P[sel, k], minlength=n_cells) for k in range(self.K)], axis=1
            )
            # sum over the cell of w^2 (1 + |P|^2): the part of sum w^2 |e_c - P|^2 that does not move
            sq_fixed = np.bincount(cell, weights=w[sel] ** 2 * (1.0 + self.sqnorm[sel]), minlength=n_cells)
            self.fixed.append((sel, cell, n_cells, 1.0 / wsum, wP, float(sq_fixed @ (1.0 / wsum)) if n_cells else 0.0))

    def _draw_classes(self, rng: np.random.Generator, cumP: np.ndarray, rows: int) -> np.ndarray:
        """``c* ~ Categorical(P)``: the number of cumulative probabilities at or below a uniform draw."""
        u = rng.random((rows, self.n))
        cls = np.zeros(u.shape, dtype=np.int64)
        for k in range(self.K - 1):  # a loop over classes, not rows
            cls += u >= cumP[..., k]
        return cls

    def _stats(self, J: np.ndarray | None, cls: np.ndarray) -> np.ndarray:
        """``T`` for every row: ``J`` (rows x n) resampled point indices or None, ``cls`` drawn classes."""
        rows = cls.shape[0]
        out = np.zeros((rows, len(self.parts)))
        pts = np.arange(self.n) if J is None else J
        P_c = self.P[pts, cls]
        w = np.ones(self.n) if self.w is None else self.w
        wp = w[pts] if J is not None else np.broadcast_to(w, cls.shape)
        sq_term = None if J is None else (wp * wp) * (1.0 - 2.0 * P_c + self.sqnorm[pts])
        row_off = np.arange(rows)[:, None]
        for j, g in enumerate(self.parts):
            G = int(g.max()) + 1
            if J is None:
                sel, cell, Gs, inv_wsum, wP, sq_fixed = self.fixed[j]
                if Gs == 0:
                    continue
                key = (row_off * Gs + cell[None, :]).ravel()
                cls_s = cls[:, sel]
                w_s = None if self.w is None else np.broadcast_to(self.w[sel], cls_s.shape).ravel()
                cnt = np.bincount(key * self.K + cls_s.ravel(), weights=w_s, minlength=rows * Gs * self.K)
                S1 = cnt.reshape(rows, Gs, self.K) - wP[None, :, :]
                # sum w^2 |e_c - P|^2 = sum w^2 (1 + |P|^2) - 2 sum w^2 P_c
                moving = np.bincount(key, weights=(wp[:, sel] ** 2 * P_c[:, sel]).ravel(), minlength=rows * Gs).reshape(
                    rows, Gs
                )
                val = np.einsum("rgk,rgk->rg", S1, S1) @ inv_wsum + 2.0 * (moving @ inv_wsum) - sq_fixed
            else:
                gj = g[J]
                key = (row_off * G + gj).ravel()
                num = np.bincount(key, minlength=rows * G).reshape(rows, G)
                Pk = np.stack(
                    [np.bincount(key, weights=self.P[J, k].ravel(), minlength=rows * G) for k in range(self.K)], axis=1
                )
                cnt = np.bincount(key * self.K + cls.ravel(), minlength=rows * G * self.K).astype(np.float64)
                S1 = (cnt - Pk.ravel()).reshape(rows, G, self.K)
                assert sq_term is not None  # J is given
                S2 = np.bincount(key, weights=sq_term.ravel(), minlength=rows * G).reshape(rows, G)
                contrib = np.einsum("rgk,rgk->rg", S1, S1) - S2
                contrib = np.where(num >= 2, contrib / np.maximum(num, 1), 0.0)
                val = contrib.sum(axis=1)
            out[:, j] = self.scale * val / self.total_weight
        return out

    def observed(self) -> np.ndarray:
        return self._stats(None, self.c[None, :])[0]

    def resampled(self, rng: np.random.Generator, rows: int, null: str) -> np.ndarray:
        if null == "consistency":
            J = rng.integers(0, self.n, size=(rows, self.n))
            cls = self._draw_classes(rng, self.cumP[J], rows)
            return self._stats(J, cls)
        cls = self._draw_classes(rng, self.cumP, rows)
        return self._stats(None, cls)

    def resampled_chunks(self, chunks: Sequence[tuple[np.random.Generator, int]], null: str) -> np.ndarray:
        return np.concatenate([self.resampled(rng, rows, null) for rng, rows in chunks], axis=0)

    def sweep_rows(self) -> int:
        return self.chunk_rows()  # one chunk per call: its arrays already fill the chunk's memory budget

    def chunk_rows(self) -> int:
        return max(1, CHUNK_BYTES // (8 * self.n * (self.K + 6)))
