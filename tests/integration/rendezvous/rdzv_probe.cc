// rdzv_probe: one simulated agent for the rendezvous integration tests. Connects to a daemon
// with RdzvClient, JOINs, prints every event as one JSON line on stdout (flushed), and takes
// commands on stdin, one per line:
//   fail ROUND EXIT_CODE RANK   report a worker failure of ROUND
//   stopped ROUND               report the workers of ROUND stopped
//   success ROUND               report every worker of ROUND succeeded
//   store-set KEY VALUE         TCPStore SET on the same connection (prints store_reply)
//   store-get KEY               TCPStore GET (prints store_reply with the value)
//   leave                       send LEAVE and exit
// With --auto-stop it answers StopWorkers with WORKERS_STOPPED itself, as an agent would.
// It exits 0 after JobFinished, on stdin EOF, after leave; 2 after a join error or a lost
// daemon (both printed first).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "rendezvous/rdzv_client.h"

namespace {

namespace m = ddp::rendezvous::membership;
using nlohmann::json;

void emit(json j) { std::cout << j.dump() << std::endl; }

json failure_json(const std::optional<m::Failure>& f) {
  if (!f) return nullptr;
  return {{"node_key", f->node_key},
          {"group_rank", f->group_rank},
          {"rank", f->rank},
          {"exit_code", f->exit_code},
          {"message", f->message}};
}

struct Probe {
  boost::asio::io_context io;
  boost::asio::posix::stream_descriptor input{io, ::dup(STDIN_FILENO)};
  boost::asio::streambuf line_buffer;
  std::shared_ptr<ddp::rendezvous::RdzvClient> client;
  bool auto_stop = false;
  int exit_code = 0;

  void finish(int code) {
    exit_code = code;
    client->close();
    io.stop();
  }

  void on_event(const m::Payload& p) {
    if (auto* r = std::get_if<m::RoundComplete>(&p)) {
      emit({{"event", "round_complete"},
            {"round", r->round},
            {"restart_count", r->restart_count},
            {"group_rank", r->group_rank},
            {"group_world_size", r->group_world_size},
            {"local_world_size", r->local_world_size},
            {"rank_offset", r->rank_offset},
            {"world_size", r->world_size},
            {"store_addr", r->store_addr},
            {"store_port", r->store_port}});
    } else if (auto* s = std::get_if<m::StopWorkers>(&p)) {
      emit({{"event", "stop_workers"},
            {"round", s->round},
            {"reason", static_cast<int>(s->reason)},
            {"detail", s->detail},
            {"first_failure", failure_json(s->first_failure)}});
      if (auto_stop) client->send_request(m::WorkersStopped{s->round});
    } else if (auto* f = std::get_if<m::JobFinished>(&p)) {
      emit({{"event", "job_finished"},
            {"exit_code", f->exit_code},
            {"reason", f->reason},
            {"root_cause", failure_json(f->root_cause)}});
      finish(0);
    } else if (auto* e = std::get_if<m::ErrorEvent>(&p)) {
      emit({{"event", "error"},
            {"code", std::string(ddp::error_code_name(e->code))},
            {"message", e->message}});
    } else if (auto* j = std::get_if<m::Joined>(&p)) {
      emit({{"event", "joined"}, {"round", j->round}, {"waiting", j->waiting}});
    }
  }

  void read_command() {
    boost::asio::async_read_until(input, line_buffer, '\n',
                                  [this](boost::system::error_code ec, std::size_t n) {
                                    if (ec) {  // EOF: the test is done with us
                                      finish(0);
                                      return;
                                    }
                                    std::string line(buffers_begin(line_buffer.data()),
                                                     buffers_begin(line_buffer.data()) + n);
                                    line_buffer.consume(n);
                                    command(line);
                                    read_command();
                                  });
  }

  void command(const std::string& line) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "fail") {
      std::uint64_t round = 0;
      m::Failure f;
      in >> round >> f.exit_code >> f.rank;
      f.pid = ::getpid();
      f.time =
          std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
      f.message = "probe failure of rank " + std::to_string(f.rank);
      client->send_request(m::ReportFailure{round, {f}});
    } else if (verb == "stopped" || verb == "success") {
      std::uint64_t round = 0;
      in >> round;
      if (verb == "stopped") {
        client->send_request(m::WorkersStopped{round});
      } else {
        client->send_request(m::ReportSuccess{round});
      }
    } else if (verb == "store-set" || verb == "store-get") {
      ddp::rendezvous::Request r;
      in >> r.key;
      r.op = verb == "store-set" ? ddp::rendezvous::Op::kSet : ddp::rendezvous::Op::kGet;
      if (r.op == ddp::rendezvous::Op::kSet) in >> r.value;
      client->store(r, [op = verb](ddp::Result<std::string> reply) {
        // GET replies u64 length + bytes; print the bytes.
        const std::string raw = reply ? reply.value() : "";
        emit({{"event", "store_reply"},
              {"op", op},
              {"ok", reply.is_ok()},
              {"value", raw.size() >= 8 ? raw.substr(8) : std::string()}});
      });
    } else if (verb == "leave") {
      client->send_request(m::Leave{"probe asked to leave"});
      emit({{"event", "left"}});
      io.stop();
    } else {
      emit({{"event", "bad_command"}, {"line", line}});
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdzv_probe: one simulated agent of the native rendezvous"};
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  m::JoinRequest join;
  std::int64_t last_call_ms = 30000, join_timeout_ms = 600000, keep_alive_ms = 1000;
  bool auto_stop = false;
  app.add_option("--host", host);
  app.add_option("--port", port)->required();
  app.add_option("--run-id", join.run_id)->required();
  app.add_option("--key", join.node.node_key)->required();
  app.add_option("--addr", join.node.addr)->default_val("127.0.0.1");
  app.add_option("--store-port", join.node.store_port)->default_val(0);
  app.add_option("--lws", join.node.local_world_size)->default_val(1);
  app.add_option("--min", join.config.min_nodes)->default_val(1);
  app.add_option("--max", join.config.max_nodes)->default_val(1);
  app.add_option("--max-restarts", join.config.max_restarts)->default_val(0);
  app.add_option("--last-call-ms", last_call_ms);
  app.add_option("--join-timeout-ms", join_timeout_ms);
  app.add_option("--keep-alive-ms", keep_alive_ms);
  app.add_option("--keep-alive-attempts", join.config.keep_alive_max_attempt)->default_val(3);
  app.add_flag("--auto-stop", auto_stop);
  CLI11_PARSE(app, argc, argv);
  join.config.last_call_timeout = std::chrono::milliseconds(last_call_ms);
  join.config.join_timeout = std::chrono::milliseconds(join_timeout_ms);
  join.config.keep_alive_interval = std::chrono::milliseconds(keep_alive_ms);

  Probe probe;
  probe.auto_stop = auto_stop;
  probe.client = ddp::rendezvous::RdzvClient::create(
      probe.io, {[&](const m::Payload& p) { probe.on_event(p); },
                 [&](const ddp::Status& s) {
                   emit({{"event", "disconnected"}, {"message", s.message()}});
                   probe.exit_code = 2;
                   probe.io.stop();
                 }});
  probe.client->connect(host, port, std::chrono::seconds(5), [&](ddp::Status s) {
    if (!s) {
      emit({{"event", "connect_error"}, {"message", s.message()}});
      probe.exit_code = 2;
      probe.io.stop();
      return;
    }
    probe.client->join(join, [&](ddp::Result<m::Joined> r) {
      if (!r) {
        emit({{"event", "join_error"},
              {"code", std::string(ddp::error_code_name(r.status().code()))},
              {"message", r.status().message()}});
        probe.finish(2);
        return;
      }
      probe.on_event(r.value());
    });
    probe.read_command();
  });
  probe.io.run();
  // Let a queued LEAVE reach the socket: run what is left without blocking on stdin.
  probe.input.close();
  probe.io.restart();
  probe.io.run_for(std::chrono::milliseconds(500));
  return probe.exit_code;
}
