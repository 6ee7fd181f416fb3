// One unary gRPC call over a Unix socket, as the kubelet's pod-resources API needs it, without a
// gRPC library (Debian's is shared-only and pulls OpenSSL and c-ares; the release binary links
// statically): HTTP/2 with prior knowledge (RFC 9113), the request's headers written as HPACK
// literals without Huffman coding, one DATA frame with the length-prefixed message, and the answer's
// DATA frames gathered until the stream ends. The answer's headers are not decoded (HPACK state is
// not needed to skip them): a call that ends without a message is an error, as is any frame that
// breaks the protocol, an answer past `max_bytes`, or the deadline. Whatever the server does, the
// call returns within the deadline with a one-line error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace baton::jobs {

// The response message's bytes (the protobuf), for `path` ("/v1.PodResourcesLister/List") with
// `request` (a serialized protobuf, often empty).
Result<std::string> grpc_unary_call(const std::string& socket_path, std::string_view path, std::string_view request,
                                    double timeout_seconds, std::size_t max_bytes = 16u << 20);

}  // namespace baton::jobs
