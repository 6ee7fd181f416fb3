// Which job a finding is about, for the people who run shared nodes and fleets: a finding on
// "gpu:3" or "pid:1234" names the Slurm job, pod, container or service behind it (Snapshot::jobs,
// from the processes' cgroups), so an alert says whose training it concerns. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/finding.hpp"
#include "sample/snapshot.hpp"

namespace baton::diagnose {

// The labels of the jobs behind a subject in `snap`: for "gpu:N" the jobs that use GPU N or were
// allocated it (also for its MIG devices, "gpu:N/mig:G"), for "pid:N" that process's job; joined with "," in label
// order when several share a GPU; empty for any other subject or when no job is known.
std::string job_of_subject(const Snapshot& snap, std::string_view subject);

// Sets each finding's `job` from the window's newest snapshot (left as it is where none is known).
void name_jobs(std::vector<Finding>& findings, const Snapshot& newest);

}  // namespace baton::diagnose
