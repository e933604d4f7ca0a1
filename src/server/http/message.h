// keel's own HTTP request and response, the only HTTP types route handlers see: the transport
// (http/transport.h, Boost.Beast underneath) parses a complete request into a Request, runs the handler on a
// request worker, and writes its Response back: a whole body, or a stream the handler writes through a
// BodyWriter after the headers went out.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/connection.h"

namespace keel::server::http {

struct Header {
  std::string name, value;
};

// The first value of header `name` (case-insensitive), or "" when absent.
std::string header_value(const std::vector<Header>& headers, std::string_view name);

struct Request {
  std::string method;  // as sent: "GET", "POST", ... (HEAD reaches handlers as GET)
  std::string target;  // the request target as sent: path and query
  std::string path;    // the target up to '?'
  std::string query;   // after '?', without it
  std::vector<Header> headers;
  std::string body;  // complete (de-chunked)
  std::string remote_addr;
  int remote_port = 0;
  // The client's socket, for noticing that it went away while the request waits or streams. Never null.
  std::shared_ptr<const ClientConnection> connection;

  std::string header(std::string_view name) const { return header_value(headers, name); }
};

// The body of a streamed response, written on the request's worker thread after the headers. write() returns
// when the bytes are in the socket (or it failed): a slow reader slows its own stream, nobody else's.
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  // False once the peer is gone or a write timed out; the caller stops (and cancels its work).
  virtual bool write(std::string_view bytes) = 0;
};

struct Response {
  int status = 200;
  std::vector<Header> headers;  // besides Content-Type, Content-Length / Transfer-Encoding and Connection
  std::string content_type;
  std::string body;
  // Set: the headers go out, then `stream` writes the body (chunked; close-delimited to an HTTP/1.0 client).
  // It returns false when the body is incomplete (the client went away): the connection is then closed
  // without the body's end.
  std::function<bool(BodyWriter&)> stream;

  void set_header(std::string name, std::string value) {
    headers.push_back({std::move(name), std::move(value)});
  }
  void set_content(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
  void set_stream(std::string type, std::function<bool(BodyWriter&)> writer) {
    content_type = std::move(type);
    stream = std::move(writer);
  }
};

}  // namespace keel::server::http
