// What the frames of a rank's stack say about where it is: the user's own frame (the innermost one
// outside the Python installation and its packages), and the collective it waits in (a
// torch.distributed call, or DDP's gradient all-reduce inside backward()). Pure, on parsed frames.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hang/python_stacks.hpp"

namespace baton::hang {

// A file of the Python installation or of an installed package (site-packages, dist-packages,
// lib/pythonX.Y, frozen modules), not the user's.
bool library_file(std::string_view path);

// The innermost frame in the user's code (frames innermost first); the outermost frame when every
// frame is a library's; null when there are none.
const PyFrame* user_frame(const std::vector<PyFrame>& frames);

// The collective the stack waits in: a torch.distributed function of the known collectives and
// point-to-point calls ("all_reduce", "barrier", "send", ...), the innermost torch.distributed
// function otherwise, "backward" for autograd's engine (where DDP's bucketed all-reduce waits);
// "" when the stack is in none of them.
std::string collective_of(const std::vector<PyFrame>& frames);

// "evaluate() at train.py:88": the function and the place, the file as given.
std::string place_text(const PyFrame& f);

}  // namespace baton::hang
