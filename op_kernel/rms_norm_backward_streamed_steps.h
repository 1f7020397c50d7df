// SPDX-License-Identifier: BSD-3-Clause
// The order in which the streamed path (rms_norm_backward_long_rows_streamed.h) visits a row group:
// pass 1 of its first row, then pass 2 of each row chunk by chunk interleaved with pass 1 of the next:
// P2(r, c), P1(r+1, c), P2(r, c+1), ... Its slot, gamma and dres queues each load the steps in this
// order, each as far ahead as its buffers allow.
#pragma once
#include "rms_norm_backward_common.h"

namespace rmsnorm_backward::kernel {

// One step: chunk `chunk` of `row` in pass 1 or 2; row == the group's end: no step left.
struct StreamedStep {
    uint64_t row;
    uint32_t pass;  // 1 or 2 (0 once no step is left)
    uint32_t chunk;
};

class StreamedSteps {
public:
    // The group of rows [begin, end), each in `chunks` chunks.
    __aicore__ inline void Start(uint64_t begin, uint64_t end, uint32_t chunks)
    {
        begin_ = begin;
        end_ = end;
        chunks_ = chunks;
    }
    __aicore__ inline bool Done(const StreamedStep &s) const { return s.row >= end_; }

    __aicore__ inline StreamedStep Next(const StreamedStep &s) const
    {
        if (s.row >= end_) {
            return s;
        }
        if (s.pass == 1) {
            if (s.chunk + 1 == chunks_) {
                return StreamedStep{s.row, 2, 0};
            }
            return s.row == begin_ ? StreamedStep{s.row, 1, s.chunk + 1} : StreamedStep{s.row - 1, 2, s.chunk + 1};
        }
        if (s.row + 1 < end_) {
            return StreamedStep{s.row + 1, 1, s.chunk};
        }
        return s.chunk + 1 < chunks_ ? StreamedStep{s.row, 2, s.chunk + 1} : StreamedStep{end_, 0, 0};
    }

private:
    uint64_t begin_ = 0, end_ = 0;
    uint32_t chunks_ = 0;
};

}  // namespace rmsnorm_backward::kernel
