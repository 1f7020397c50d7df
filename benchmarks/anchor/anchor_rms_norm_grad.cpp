// SPDX-License-Identifier: BSD-3-Clause
// Entry of the anchor kernel (see anchor_common.h): the tiling key names the path and the dtype.
#include "anchor_split_d.h"
#include "anchor_split_n.h"

using namespace rmsnorm_backward::anchor;

template <class Path>
__aicore__ inline void RunPath(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma,
                               GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
{
    Path path;
    path.Init(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
    path.Process();
}

template <typename T>
__aicore__ inline void RunDtype(uint32_t dtypeIndex, GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx,
                                GM_ADDR dgamma, GM_ADDR workspace, const AnchorTiling &tiling, TPipe *pipe)
{
    auto key = [dtypeIndex](AnchorPath path) { return static_cast<uint32_t>(path) * kDtypes + dtypeIndex; };
    if (TILING_KEY_IS(key(AnchorPath::kSplitN))) {
        RunPath<AnchorSplitN<T>>(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
    } else if (TILING_KEY_IS(key(AnchorPath::kSplitD))) {
        RunPath<AnchorSplitD<T>>(dy, x, rstd, gamma, dx, dgamma, workspace, tiling, pipe);
    }
}

extern "C" __global__ __aicore__ void anchor_rms_norm_grad(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma,
                                                           GM_ADDR dx, GM_ADDR dgamma, GM_ADDR workspace,
                                                           GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(AnchorTiling, tilingData, tiling);
    TPipe pipe;
    RunDtype<float>(0, dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    RunDtype<half>(1, dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
    RunDtype<bfloat16_t>(2, dy, x, rstd, gamma, dx, dgamma, workspace, tilingData, &pipe);
}
