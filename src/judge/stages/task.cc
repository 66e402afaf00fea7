// task.cc — the task stage: the task's shape checked before any Python runs, its source written
// where the jobs read it.
#include "judge/stages/stages.h"

namespace cuda_agent {

Next CheckTask(Judgement& j, const Task& task) {
  JudgeResult& r = j.result();
  r.stage = Stage::kTask;
  r.task = {{"id", task.id}, {"name", task.name}, {"path", task.source_path.string()}};
  if (Status shape = CheckTaskShape(task); !shape.ok()) return j.TaskError(shape.message());
  if (Status w = WriteFileAtomic(j.dirs().task_file, task.code); !w.ok())
    return j.Internal(w.message());
  return Next::kContinue;
}

}  // namespace cuda_agent
