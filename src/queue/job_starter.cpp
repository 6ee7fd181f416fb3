#include "queue/job_starter.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace baton::queue {

Result<JobOwner> job_owner(std::uint32_t uid) {
    std::vector<char> buf(16384);
    passwd pw{}, *found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return make_error(ErrorCode::not_found, "no user with uid " + std::to_string(uid) + " on this machine");
    JobOwner o;
    o.uid = pw.pw_uid;
    o.gid = pw.pw_gid;
    o.name = pw.pw_name;
    o.home = pw.pw_dir ? pw.pw_dir : "";
    o.shell = pw.pw_shell ? pw.pw_shell : "";
    return o;
}

std::vector<std::string> visible_devices(const std::vector<std::string>& held, const std::vector<PoolGpu>& gpus,
                                         bool by_uuid) {
    std::vector<std::string> visible;
    for (const std::string& u : held) {
        std::string name = u;
        if (!by_uuid)
            for (const PoolGpu& g : gpus)
                if (g.uuid == u) name = std::to_string(g.index);
        if (name.rfind("index:", 0) == 0) name = name.substr(6);
        visible.push_back(name);
    }
    return visible;
}

void set_login_variables(std::vector<std::string>& env, const JobOwner& owner) {
    auto set = [&](const std::string& key, const std::string& value) {
        auto it =
            std::find_if(env.begin(), env.end(), [&](const std::string& kv) { return kv.rfind(key + "=", 0) == 0; });
        if (it != env.end())
            *it = key + "=" + value;
        else
            env.push_back(key + "=" + value);
    };
    set("HOME", owner.home);
    set("USER", owner.name);
    set("LOGNAME", owner.name);
    if (!owner.shell.empty()) set("SHELL", owner.shell);
}

Status make_attempt_dirs(const std::string& job_dir, const std::string& attempt_dir) {
    std::error_code ec;
    std::filesystem::create_directories(attempt_dir, ec);
    if (ec) return make_error("cannot create " + attempt_dir + ": " + ec.message());
    for (const std::string& d : {job_dir, attempt_dir}) ::chmod(d.c_str(), ::geteuid() == 0 ? 0711 : 0700);
    return Ok{};
}

std::optional<std::string> foreign_gpu_process(const std::vector<std::string>& uuids, const std::vector<GpuInfo>& gpus,
                                               const std::set<std::uint32_t>& queue_pids) {
    for (const std::string& u : uuids)
        for (const GpuInfo& g : gpus) {
            if (g.uuid != u && "index:" + std::to_string(g.index) != u) continue;
            for (const GpuProcess& gp : g.processes)
                if (gp.type == GpuProcessType::compute && !queue_pids.count(gp.our_pid()) && !queue_pids.count(gp.pid))
                    return "GPU" + std::to_string(g.index) + " got a process the queue did not start (pid " +
                           std::to_string(gp.pid) + ") just before the start";
        }
    return std::nullopt;
}

}  // namespace baton::queue
