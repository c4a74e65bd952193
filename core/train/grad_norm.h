// The global L2 norm of a step's reduced gradients, for clipping and the step report, whatever
// the layout holds of them: every parameter's own gradient (one rank, data parallel without
// sharding), or this rank's shard of the flat space (ZeRO-2 / 3); tensor-parallel parts of
// split parameters, whole parameters replicated on every tensor rank; a pipeline's stages each
// holding their layers, the tied embedding on the first and the last.
#pragma once

#include "core/model/model.h"
#include "core/parallel/mesh.h"
#include "core/train/grad_reducer.h"

namespace parascope {

// Collective over the mesh's groups that hold parts: the data-parallel group when `reducer`
// shards (its squares summed), the tensor group (split parameters' squares summed, whole ones
// counted once) and the pipeline group (each stage's sum). `skip`: a parameter this rank holds a
// copy of that another stage counts (the tied embedding on a pipeline's last stage), or -1.
// Infinite or NaN if any part holds an inf or NaN.
double globalGradientNorm(const Model& model, const GradientReducer* reducer, DeviceMesh& mesh,
                          int skip = -1);

}  // namespace parascope
