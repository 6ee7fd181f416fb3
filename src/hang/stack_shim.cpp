#include "hang/stack_shim.hpp"

#include <cerrno>
#include <csignal>
#include <sys/stat.h>

#include "core/files.hpp"
#include "core/text_parse.hpp"
#include "hang/hook_package.hpp"

namespace baton::hang {

namespace {

// Every shim directory holds this file: a shim skips the directories that have it when it looks for
// the user's sitecustomize, so a baton run inside a baton launch chains to the user's, not in a loop.
constexpr const char* kMarker = "baton-stacks-shim";

// Registration first (so a user sitecustomize that fails cannot stop it), then the user's
// sitecustomize, whose errors reach site.py exactly as they would without the shim. No output on
// any failure of our own: a job must run as it would without baton.
constexpr std::string_view kSource =
    R"PY(# Written by baton (baton run, baton launch): lets `baton stacks` and baton's hang verdict ask
# this process for the Python stacks of all its threads (docs/launch.md, "When a job hangs"). On
# $BATON_STACKS_SIGNAL a thread of its own writes them with faulthandler to $BATON_STACKS_DIR/PID.txt.
# Then it runs the sitecustomize this file hides on sys.path, if there is one.
import sys as _sys


def _baton_register():
    import os
    folder = os.environ.get("BATON_STACKS_DIR")
    signum = os.environ.get("BATON_STACKS_SIGNAL")
    if not folder or not signum or "_baton_stacks" in _sys.modules:
        return
    try:
        import _signal
        import _thread
        import faulthandler
        sig = int(signum)
        pid = os.getpid()
        with open("/proc/self/stat", "rb") as f:
            start = int(f.read().rsplit(b")", 1)[1].split()[19])
        exe = os.readlink("/proc/self/exe")
        new = os.path.join(folder, "%d.new" % pid)
        out = open(new, "a", encoding="ascii", errors="backslashreplace")
        out.write("# baton stacks: pid %d start %d exe %s\n" % (pid, start, exe))
        out.flush()
        # The signal is blocked in this thread, so in every thread the script starts, and taken by a
        # thread of the shim's own with sigwait(): no system call of the script is interrupted (a C
        # library's poll() that does not retry on EINTR, as torch 1.13's TCPStore, would fail), and the
        # dump is written holding the GIL, so no other thread's frames change while they are read (a
        # signal handler's dump of a thread that runs may read freed frames and crash the process).
        _signal.pthread_sigmask(_signal.SIG_BLOCK, [sig])
        # A thread that unblocks every signal (some C libraries do) then takes it harmlessly.
        _signal.signal(sig, lambda *_: None)

        def _baton_signal_thread():
            while True:
                _signal.sigwait([sig])
                faulthandler.dump_traceback(file=out, all_threads=True)

        _thread.start_new_thread(_baton_signal_thread, ())
        os.replace(new, os.path.join(folder, "%d.txt" % pid))
        _sys.modules["_baton_stacks"] = _sys.modules[__name__]
        globals()["_baton_file"] = out
    except Exception:
        pass


def _baton_auto_hook():
    # Steps with no change to the script: once `import torch` has run, the baton package beside this
    # file (baton/_auto.py) patches the optimizer step and the DataLoader iterator. Nothing is imported
    # before the script imports torch, and nothing at all when it never does.
    import os
    if not os.environ.get("BATON_EVENTS") or os.environ.get("BATON_AUTO_HOOK") == "0":
        return

    class _BatonTorchFinder:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "torch":
                return None
            try:
                _sys.meta_path.remove(cls)
            except ValueError:
                pass
            for finder in _sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find else None
                if spec is not None:
                    break
            else:
                return None
            loader = spec.loader
            run = getattr(loader, "exec_module", None)
            if run is None:
                return spec

            def exec_module(module):
                try:  # the loader is torch's alone, unless it is an importer's that loads others too
                    del loader.exec_module
                except AttributeError:
                    pass
                run(module)
                if module.__name__ != "torch":
                    return
                try:
                    from baton import _auto
                    _auto.install(module)
                except Exception as e:
                    _sys.stderr.write("baton: steps will not be measured without baton.torch.watch: %r\n" % (e,))

            try:
                loader.exec_module = exec_module
            except Exception:  # a loader that takes no attribute: no automatic steps
                pass
            return spec

    if "torch" not in _sys.modules:
        _sys.meta_path.insert(0, _BatonTorchFinder)


def _baton_chain():
    import os
    try:  # the import system's own modules, loaded at every start (importlib.util costs 8 ms more)
        from _frozen_importlib_external import PathFinder
        from _frozen_importlib import module_from_spec
    except ImportError:
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec
    rest = [p for p in _sys.path if not os.path.exists(os.path.join(p or os.curdir, "baton-stacks-shim"))]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_baton_register()
_baton_auto_hook()
_baton_chain()
)PY";

Status make_private_dir(const std::string& dir) {
    if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return Ok{};
    return os_error("cannot create " + dir, errno);
}

Status write_shim_files(const std::string& shim_dir, mode_t mode) {
    if (Status s = write_hook_package(shim_dir, mode); !s.ok()) return s;
    if (Status s = write_file_atomically(shim_dir + "/sitecustomize.py", std::string(kSource)); !s.ok()) return s;
    if (Status s = write_file_atomically(shim_dir + "/" + kMarker, ""); !s.ok()) return s;
    // Readable by the job's processes (they are this user's; 0600 would do, but a job that drops
    // privileges to run its Python, as a container's entry point may, still finds it).
    chmod((shim_dir + "/sitecustomize.py").c_str(), 0644);
    return Ok{};
}

}  // namespace

int stacks_signal() {
    return SIGRTMAX - 5;
}

std::string_view shim_source() {
    return kSource;
}

Status install_shim(const std::string& shim_dir, const std::string& stacks_dir) {
    for (const std::string& d : {shim_dir, stacks_dir})
        if (Status s = make_private_dir(d); !s.ok()) return s;
    return write_shim_files(shim_dir, 0700);
}

Status install_shim_dir(const std::string& shim_dir, mode_t mode) {
    if (mkdir(shim_dir.c_str(), mode) != 0) {
        if (errno != EEXIST) return os_error("cannot create " + shim_dir, errno);
        if (chmod(shim_dir.c_str(), mode) != 0) return os_error("cannot set the mode of " + shim_dir, errno);
    }
    return write_shim_files(shim_dir, mode);
}

std::vector<std::pair<std::string, std::string>> shim_environment(const std::string& shim_dir,
                                                                  const std::string& stacks_dir,
                                                                  const std::optional<std::string>& python_path) {
    std::string path = shim_dir;
    if (python_path && !python_path->empty()) path += ":" + *python_path;
    return {{"PYTHONPATH", path},
            {kStacksDirVariable, stacks_dir},
            {kStacksSignalVariable, std::to_string(stacks_signal())}};
}

std::optional<StacksHeader> parse_stacks_header(std::string_view line) {
    constexpr std::string_view kPrefix = "# baton stacks: pid ";
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
    line.remove_prefix(kPrefix.size());
    auto word = [&line]() {
        const std::size_t sp = line.find(' ');
        const std::string_view w = line.substr(0, sp);
        line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
        return w;
    };
    StacksHeader h;
    const std::optional<std::int64_t> pid = text::parse_digits<std::int64_t>(word());
    if (!pid || *pid <= 0 || word() != "start") return std::nullopt;
    const std::optional<std::uint64_t> start = text::parse_digits<std::uint64_t>(word());
    if (!start || word() != "exe" || line.empty()) return std::nullopt;
    h.pid = *pid;
    h.start_ticks = *start;
    h.exe = std::string(line);
    return h;
}

}  // namespace baton::hang
