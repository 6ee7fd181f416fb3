# Embeds a text file in the program: writes OUT, a C++ source defining
#   std::string_view NAME() { return <the file's text>; }
# in namespace baton. Used for docs/findings.md (`baton explain RULE`), so an installed baton has
# the catalogue without a source tree.
#   cmake -DIN=<file> -DOUT=<file.cpp> -DNAME=<function> -P embed_text.cmake
file(READ "${IN}" text)
# A raw string literal: no escaping needed, only a delimiter the text never contains.
set(delim "baton_doc")  # at most 16 characters
string(FIND "${text}" ")${delim}" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delim}")
endif()
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/embed_text.cmake: do not edit.\n#include <string_view>\n\nnamespace baton {\n\nstd::string_view ${NAME}() {\n    return R\"${delim}(${text})${delim}\";\n}\n\n}  // namespace baton\n")
