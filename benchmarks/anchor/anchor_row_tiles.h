// What split-N and small-D share: a core's rows go through UB in tiles of whole rows (dy, x and rstd
// double buffered, the next tile's load issued by the path's ComputeTile once its row sums are
// known), gamma widened once, dgamma summed in UB and added to GM once per core.
//
// UB here (S = rowStride, R = tileRows, s = sizeof(T)): dy, x queues 2 x R*S*s each; rstd queue
// 2 x R*4 (whole blocks); dx R*S*s; gamma, dgamma S*4 each; 16-bit only: dy, x in fp32 R*S*4 each.
#pragma once
#include "anchor_common.h"

namespace anchor {

template <typename T, class Path>
class AnchorRowTiles : public AnchorKernelBase<T> {
protected:
    using KernelBase = AnchorKernelBase<T>;
    using KernelBase::t_, KernelBase::pipe_, KernelBase::gm_, KernelBase::out_;

public:
    __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                                GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
    {
        KernelBase::InitBase(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
        const uint32_t tile = t_.tileRows * t_.rowStride;
        pipe_->InitBuffer(dyQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(xQue_, 2, tile * sizeof(T));
        pipe_->InitBuffer(rstdQue_, 2, RoundUp(t_.tileRows * sizeof(float), kBlockBytes));
        pipe_->InitBuffer(dxQue_, 1, tile * sizeof(T));
        pipe_->InitBuffer(gammaBuf_, t_.rowStride * sizeof(float));
        pipe_->InitBuffer(dgammaBuf_, t_.rowStride * sizeof(float));
        if constexpr (!IsFloat<T>()) {
            pipe_->InitBuffer(dyF32Buf_, tile * sizeof(float));
            pipe_->InitBuffer(xF32Buf_, tile * sizeof(float));
        }
        static_cast<Path *>(this)->InitPath();
    }

    __aicore__ inline void Process()
    {
        dgamma_ = dgammaBuf_.Get<float>();
        out_.Zero(t_, dgamma_, t_.cols, pipe_);
        LoadGamma();
        Duplicate(dgamma_, 0.0f, t_.cols);
        VectorBarrier();
        mine_ = CoreRows(t_);
        if (mine_.begin < mine_.end) {
            CopyIn(mine_.begin);
        }
        for (uint64_t row = mine_.begin; row < mine_.end; row += t_.tileRows) {
            static_cast<Path *>(this)->ComputeTile(row, Rows(row));
        }
        out_.AddPart(0, dgamma_, t_.cols, pipe_);
        if (t_.deterministic) {
            FinalSum(t_, out_, pipe_);
        }
    }

protected:
    __aicore__ inline uint32_t Rows(uint64_t row) const
    {
        const uint64_t left = mine_.end - row;
        return left < t_.tileRows ? uint32_t(left) : t_.tileRows;
    }

    __aicore__ inline void LoadGamma()
    {
        gammaF32_ = gammaBuf_.Get<float>();
        if constexpr (IsFloat<T>()) {
            LoadRows(gammaF32_, gm_.gamma, 1, t_.cols, t_.cols, t_.rowStride);
            WaitFor<HardEvent::MTE2_V>(pipe_);
        } else {
            LocalTensor<T> staged = dyF32Buf_.Get<T>();  // free until the first tile is widened
            LoadRows(staged, gm_.gamma, 1, t_.cols, t_.cols, t_.rowStride);
            WaitFor<HardEvent::MTE2_V>(pipe_);
            Cast(gammaF32_, staged, RoundMode::CAST_NONE, t_.cols);
            VectorBarrier();
        }
    }

    // Queues the tile starting at `row` when there is one.
    __aicore__ inline void CopyIn(uint64_t row)
    {
        if (row >= mine_.end) {
            return;
        }
        const uint32_t n = Rows(row);
        LocalTensor<T> dy = dyQue_.AllocTensor<T>();
        LocalTensor<T> x = xQue_.AllocTensor<T>();
        LocalTensor<float> rstd = rstdQue_.AllocTensor<float>();
        LoadRows(dy, gm_.dy[row * t_.cols], n, t_.cols, t_.cols, t_.rowStride);
        LoadRows(x, gm_.x[row * t_.cols], n, t_.cols, t_.cols, t_.rowStride);
        LoadRows(rstd, gm_.rstd[row], 1, n, n, RoundUp(n, kBlockBytes / sizeof(float)));
        dyQue_.EnQue(dy);
        xQue_.EnQue(x);
        rstdQue_.EnQue(rstd);
    }

    // The tile's inputs in fp32 (16-bit data widened) and its dx buffer.
    struct Tile {
        LocalTensor<T> dyT, xT, dxT;
        LocalTensor<float> rstd, dy, x;
    };
    __aicore__ inline Tile TakeTile(uint32_t n)
    {
        Tile tile;
        tile.dyT = dyQue_.DeQue<T>();
        tile.xT = xQue_.DeQue<T>();
        tile.rstd = rstdQue_.DeQue<float>();
        tile.dxT = dxQue_.AllocTensor<T>();
        if constexpr (IsFloat<T>()) {
            tile.dy = tile.dyT;
            tile.x = tile.xT;
        } else {
            tile.dy = dyF32Buf_.Get<float>();
            tile.x = xF32Buf_.Get<float>();
            Cast(tile.dy, tile.dyT, RoundMode::CAST_NONE, n * t_.rowStride);
            VectorBarrier();
            Cast(tile.x, tile.xT, RoundMode::CAST_NONE, n * t_.rowStride);
            VectorBarrier();
        }
        return tile;
    }

    // dx in fp32 is in `dxF32` (dxT itself for fp32 data): round it, free the inputs, copy dx out.
    __aicore__ inline void FinishTile(Tile &tile, const LocalTensor<float> &dxF32, uint64_t row, uint32_t n)
    {
        if constexpr (!IsFloat<T>()) {
            Cast(tile.dxT, dxF32, RoundMode::CAST_RINT, n * t_.rowStride);
            VectorBarrier();
        }
        dxQue_.EnQue(tile.dxT);
        dyQue_.FreeTensor(tile.dyT);
        xQue_.FreeTensor(tile.xT);
        rstdQue_.FreeTensor(tile.rstd);
        LocalTensor<T> dxT = dxQue_.DeQue<T>();
        StoreRows(gm_.dx[row * t_.cols], dxT, n, t_.cols, t_.cols, t_.rowStride);
        dxQue_.FreeTensor(dxT);
    }

    RowRange mine_{0, 0};
    TQue<QuePosition::VECIN, 2> dyQue_, xQue_, rstdQue_;
    TQue<QuePosition::VECOUT, 1> dxQue_;
    TBuf<QuePosition::VECCALC> gammaBuf_, dgammaBuf_, dyF32Buf_, xF32Buf_;
    LocalTensor<float> gammaF32_, dgamma_;
};

}  // namespace anchor
