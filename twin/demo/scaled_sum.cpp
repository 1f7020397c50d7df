// SPDX-License-Identifier: BSD-3-Clause
// Demo kernel: a small, ordinary Ascend C kernel that the CPU twin runs, for the twin's speed benchmark
// (benchmarks/twin_speed.py) and the twin's tests (tests/test_run_kernel.py). Per tile of x and y (fp32):
// copy in, a few vector ops, a reduction, copy out: z = (x * y + x) * 0.5 and sums[tile] = sum of z.
// Tiles are dealt to the cores round-robin; two buffers per queue overlap copy and compute.
#include "kernel_operator.h"
using namespace AscendC;

struct ScaledSumTiling {
    uint32_t tiles;
    uint32_t tileLen;  // fp32 elements per tile, a multiple of 64 (one repeat)
};

class ScaledSum {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR sums, const ScaledSumTiling &tiling)
    {
        tiles_ = tiling.tiles;
        tileLen_ = tiling.tileLen;
        xGm_.SetGlobalBuffer((__gm__ float *)x, uint64_t(tiles_) * tileLen_);
        yGm_.SetGlobalBuffer((__gm__ float *)y, uint64_t(tiles_) * tileLen_);
        zGm_.SetGlobalBuffer((__gm__ float *)z, uint64_t(tiles_) * tileLen_);
        sumsGm_.SetGlobalBuffer((__gm__ float *)sums, tiles_);
        pipe_.InitBuffer(inX_, 2, tileLen_ * sizeof(float));
        pipe_.InitBuffer(inY_, 2, tileLen_ * sizeof(float));
        pipe_.InitBuffer(outZ_, 2, tileLen_ * sizeof(float));
        pipe_.InitBuffer(outSum_, 2, 32);
        pipe_.InitBuffer(work_, tileLen_ * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t tile = GetBlockIdx(); tile < tiles_; tile += GetBlockNum()) {
            CopyIn(tile);
            Compute();
            CopyOut(tile);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t tile)
    {
        LocalTensor<float> x = inX_.AllocTensor<float>();
        LocalTensor<float> y = inY_.AllocTensor<float>();
        DataCopy(x, xGm_[uint64_t(tile) * tileLen_], tileLen_);
        DataCopy(y, yGm_[uint64_t(tile) * tileLen_], tileLen_);
        inX_.EnQue(x);
        inY_.EnQue(y);
    }

    __aicore__ inline void Compute()
    {
        LocalTensor<float> x = inX_.DeQue<float>();
        LocalTensor<float> y = inY_.DeQue<float>();
        LocalTensor<float> z = outZ_.AllocTensor<float>();
        LocalTensor<float> sum = outSum_.AllocTensor<float>();
        Mul(z, x, y, tileLen_);
        Add(z, z, x, tileLen_);
        Muls(z, z, 0.5f, tileLen_);
        ReduceSum(sum, z, work_.Get<float>(), tileLen_);
        outZ_.EnQue(z);
        outSum_.EnQue(sum);
        inX_.FreeTensor(x);
        inY_.FreeTensor(y);
    }

    __aicore__ inline void CopyOut(uint32_t tile)
    {
        LocalTensor<float> z = outZ_.DeQue<float>();
        LocalTensor<float> sum = outSum_.DeQue<float>();
        DataCopy(zGm_[uint64_t(tile) * tileLen_], z, tileLen_);
        DataCopyPad(sumsGm_[tile], sum, DataCopyExtParams(1, sizeof(float), 0, 0, 0));
        outZ_.FreeTensor(z);
        outSum_.FreeTensor(sum);
    }

    TPipe pipe_;
    TQue<QuePosition::VECIN, 2> inX_, inY_;
    TQue<QuePosition::VECOUT, 2> outZ_, outSum_;
    TBuf<QuePosition::VECCALC> work_;
    GlobalTensor<float> xGm_, yGm_, zGm_, sumsGm_;
    uint32_t tiles_ = 0;
    uint32_t tileLen_ = 0;
};

extern "C" __global__ __aicore__ void scaled_sum(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR sums, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(ScaledSumTiling, t, tiling);
    ScaledSum op;
    op.Init(x, y, z, sums, t);
    op.Process();
}
