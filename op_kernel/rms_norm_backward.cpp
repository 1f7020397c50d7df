// SPDX-License-Identifier: BSD-3-Clause
// RmsNormBackward kernel entry: reads the tiling, runs the path the tiling key names, then (when dgamma
// was summed in several row groups) waits for all cores and reduces the partials in a fixed order.
// Without gamma there is no dgamma: no partials, no SyncAll, no reduction.
#include "kernel_operator.h"
#include "rms_norm_backward_dgamma.h"
#include "rms_norm_backward_long_rows.h"
#include "rms_norm_backward_long_rows_streamed.h"
#include "rms_norm_backward_rows_in_ub.h"
#include "rms_norm_backward_small_cols.h"

using namespace rmsnorm_backward::kernel;

// Path<T> runs the launch whose tiling key is `key`: MakeKey of the class's path and T's dtype.
template <template <typename> class Path, typename T, uint64_t key>
__aicore__ inline void RunPath(const KernelArgs &args, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
{
    static_assert(static_cast<uint64_t>(MakeKey(Path<T>::kPath, kDtypeOf<T>)) == key,
                  "a branch's number must be the tiling key of the path and dtype it runs");
    Path<T> path;
    path.Init(args, tiling, pipe);
    path.Process();
}

extern "C" __global__ __aicore__ void rms_norm_backward(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma,
                                                        GM_ADDR dres, GM_ADDR dx, GM_ADDR dgamma,
                                                        GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(RmsNormBackwardTilingData, tilingData, tiling);
    TPipe pipe;
    const KernelArgs args{dy, x, rstd, gamma, dres, dx, dgamma, workspace};
    // One branch per key, the key as a number: CANN's kernel compiler finds a kernel's tiling keys by
    // reading TILING_KEY_IS(<number>) in the preprocessed entry (an enum or constexpr there is no key to
    // it) and builds one binary per key, in which the other branches fold away. RunPath checks each
    // number against op_def's MakeKey.
    if (TILING_KEY_IS(100)) {
        RunPath<RmsNormBackwardRowsInUb, float, 100>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(101)) {
        RunPath<RmsNormBackwardRowsInUb, half, 101>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(102)) {
        RunPath<RmsNormBackwardRowsInUb, bfloat16_t, 102>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(200)) {
        RunPath<RmsNormBackwardLongRows, float, 200>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(201)) {
        RunPath<RmsNormBackwardLongRows, half, 201>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(202)) {
        RunPath<RmsNormBackwardLongRows, bfloat16_t, 202>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(300)) {
        RunPath<RmsNormBackwardSmallCols, float, 300>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(301)) {
        RunPath<RmsNormBackwardSmallCols, half, 301>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(302)) {
        RunPath<RmsNormBackwardSmallCols, bfloat16_t, 302>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(400)) {
        RunPath<RmsNormBackwardLongRowsStreamed, float, 400>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(401)) {
        RunPath<RmsNormBackwardLongRowsStreamed, half, 401>(args, tilingData, &pipe);
    } else if (TILING_KEY_IS(402)) {
        RunPath<RmsNormBackwardLongRowsStreamed, bfloat16_t, 402>(args, tilingData, &pipe);
    }
    if (tilingData.gamma_bytes != 0 && tilingData.groups > 1) {
        pipe.Reset();
        SyncAll();  // waits for every pipe of every core (the default SyncAllConfig): all partials have landed
        RmsNormBackwardDgammaReduce reduce;
        reduce.Init(dgamma, workspace, tilingData, &pipe);
        reduce.Process();
    }
}
