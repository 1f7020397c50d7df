// RmsNormBackward kernel entry: reads the tiling, runs the path the tiling key names, then (when dgamma
// was summed in several row groups) waits for all cores and reduces the partials in a fixed order.
#include "kernel_operator.h"
#include "rms_norm_backward_dgamma.h"
#include "rms_norm_backward_long_rows.h"
#include "rms_norm_backward_long_rows_streamed.h"
#include "rms_norm_backward_rows_in_ub.h"
#include "rms_norm_backward_small_cols.h"

using namespace rms_norm_backward_impl;

#define RMS_NORM_BACKWARD_KEY(name) static_cast<uint32_t>(RmsNormBackwardTilingKey::name)

template <class Path>
__aicore__ inline void RunPath(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                               GM_ADDR workspace, const RmsNormBackwardTilingData &tiling, TPipe *pipe)
{
    Path path;
    path.Init(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
    path.Process();
}

extern "C" __global__ __aicore__ void rms_norm_backward(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma,
                                                        GM_ADDR dx, GM_ADDR dgamma, GM_ADDR workspace,
                                                        GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(RmsNormBackwardTilingData, tilingData, tiling);
    TPipe pipe;
    if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kRowsInUbFp32))) {
        RunPath<RmsNormBackwardRowsInUb<float>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kRowsInUbFp16))) {
        RunPath<RmsNormBackwardRowsInUb<half>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kRowsInUbBf16))) {
        RunPath<RmsNormBackwardRowsInUb<bfloat16_t>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsFp32))) {
        RunPath<RmsNormBackwardLongRows<float>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsFp16))) {
        RunPath<RmsNormBackwardLongRows<half>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsBf16))) {
        RunPath<RmsNormBackwardLongRows<bfloat16_t>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kSmallColsFp32))) {
        RunPath<RmsNormBackwardSmallCols<float>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kSmallColsFp16))) {
        RunPath<RmsNormBackwardSmallCols<half>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kSmallColsBf16))) {
        RunPath<RmsNormBackwardSmallCols<bfloat16_t>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsStreamedFp32))) {
        RunPath<RmsNormBackwardLongRowsStreamed<float>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsStreamedFp16))) {
        RunPath<RmsNormBackwardLongRowsStreamed<half>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    } else if (TILING_KEY_IS(RMS_NORM_BACKWARD_KEY(kLongRowsStreamedBf16))) {
        RunPath<RmsNormBackwardLongRowsStreamed<bfloat16_t>>(dy, x, rstd, gamma, dx, dgamma, workspace, tilingData,
                                                             &pipe);
    }
    if (tilingData.groups > 1) {
        pipe.Reset();
        SyncAll();  // waits for every pipe of every core (the default SyncAllConfig): all partials have landed
        RmsNormBackwardDgammaReduce reduce;
        reduce.Init(dgamma, workspace, tilingData, &pipe);
        reduce.Process();
    }
}
