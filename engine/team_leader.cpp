#include "engine/team_leader.h"

#include <map>

#include "engine/run_width.h"

namespace graphi::engine {

namespace {
std::mutex g_leaders_mutex;
std::map<int, std::weak_ptr<TeamLeader>>& leaders() {
  static auto* m = new std::map<int, std::weak_ptr<TeamLeader>>;  // never destroyed: safe at exit
  return *m;
}
}  // namespace

std::shared_ptr<TeamLeader> TeamLeader::acquire(int threads) {
  std::lock_guard<std::mutex> lock(g_leaders_mutex);
  std::weak_ptr<TeamLeader>& slot = leaders()[threads];
  if (std::shared_ptr<TeamLeader> l = slot.lock()) return l;
  std::shared_ptr<TeamLeader> l(new TeamLeader(threads));
  slot = l;
  return l;
}

bool TeamLeader::enabled() { return team_sharing_from_env() == TeamSharing::kLeader; }

int TeamLeader::live_leaders() {
  std::lock_guard<std::mutex> lock(g_leaders_mutex);
  int n = 0;
  for (const auto& [k, w] : leaders()) n += !w.expired();
  return n;
}

// The leader is a new OpenMP master with one team of `threads`: k - 1 threads more for libgomp.
TeamLeader::TeamLeader(int threads) : threads_(threads), claim_(1, threads, false) {
  CPU_ZERO(&job_mask_);
  thread_ = std::thread([this] { loop(); });
}

TeamLeader::~TeamLeader() {
  stop_.store(true, std::memory_order_seq_cst);
  job_parker_.wake();
  thread_.join();
}

void TeamLeader::run(const std::function<void()>& job) {
  {
    std::unique_lock<std::mutex> turn(turn_mutex_);
    const uint64_t mine = next_ticket_++;
    turn_cv_.wait(turn, [&] { return serving_ == mine; });
  }
  struct NextTurn {
    TeamLeader& l;
    ~NextTurn() {
      {
        std::lock_guard<std::mutex> turn(l.turn_mutex_);
        ++l.serving_;
      }
      l.turn_cv_.notify_all();
    }
  } next_turn{*this};
  std::lock_guard<std::mutex> lock(submit_);
  if (sched_getaffinity(0, sizeof job_mask_, &job_mask_) != 0) CPU_ZERO(&job_mask_);
  done_.store(false, std::memory_order_relaxed);
  job_.store(&job, std::memory_order_seq_cst);
  job_parker_.wake();
  done_parker_.wait([&] { return done_.load(std::memory_order_acquire); },
                    std::chrono::microseconds(0));
}

void TeamLeader::loop() {
  cpu_set_t current;
  CPU_ZERO(&current);
  while (true) {
    job_parker_.wait([&] {
      return job_.load(std::memory_order_acquire) != nullptr ||
             stop_.load(std::memory_order_acquire);
    });
    const std::function<void()>* job = job_.load(std::memory_order_acquire);
    if (!job) return;  // stop_ and nothing submitted
    if (CPU_COUNT(&job_mask_) > 0 && !CPU_EQUAL(&job_mask_, &current)) {
      sched_setaffinity(0, sizeof job_mask_, &job_mask_);
      current = job_mask_;
    }
    (*job)();
    job_.store(nullptr, std::memory_order_relaxed);
    done_.store(true, std::memory_order_seq_cst);
    done_parker_.wake();
  }
}

}  // namespace graphi::engine
