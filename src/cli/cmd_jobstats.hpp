// `baton jobstats JOB`: how well a job used what it was given (GPUs, cores, memory, time), from the
// agents (baton serve) of the nodes it ran on, with notes on what to request next time; and the
// jobstats JS1 summary that deploy/slurm/baton-jobstats-epilog stores in the job's AdminComment.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace baton::cli {

struct JobstatsArgs {
    std::string job;                  // "1234", "slurm:1234", "pod:ns/name"
    std::vector<std::string> agents;  // http://HOST:PORT of each agent to ask
    std::string nodes;                // host names, comma-separated (asked on --port)
    int port = 0;                     // 0: [serve] listen's
    std::string token_file;           // "": [serve] token_file
    double timeout_seconds = 10;
    bool json = false, jobstats = false, js1 = false;
};

CLI::App* add_jobstats_command(CLI::App& app, JobstatsArgs& args);
int run_jobstats(const JobstatsArgs& args, const std::string& config_path);

}  // namespace baton::cli
