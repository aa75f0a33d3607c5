// The MPI transport (Open MPI): the fixed-order sum as an all-to-all of pieces, a local sum in
// rank order and an all-gather (ordered_sum.h), so MPI only moves bytes and never adds.
//
// A rank that dies ends the job through mpirun, which names it. A rank that hangs leaves the
// others waiting in a collective, where MPI has no timeout: a watchdog thread ends this rank
// when one collective has waited longer than the job's timeout, and mpirun then ends the rest.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/error.h"
#include "dist/collective.h"
#include "dist/ordered_sum.h"

#if ORION_HAVE_MPI
#include <mpi.h>
#endif

namespace orion::dist {

#if ORION_HAVE_MPI

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(what) + ": " + std::string(text, static_cast<std::size_t>(len)));
}

// Ends the process when a collective has waited past the timeout. Only the main thread calls MPI
// (MPI_THREAD_FUNNELED): the watchdog prints and exits, and mpirun ends the other ranks.
class Watchdog {
 public:
  Watchdog(int rank, int size, double timeout_s) : rank_(rank), size_(size), timeout_s_(timeout_s) {
    if (timeout_s_ > 0) thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Marks a collective as waiting (what names it in the message) until the guard goes.
  class Guard {
   public:
    Guard(Watchdog& w, const char* what) : w_(w) { w_.begin(what); }
    ~Guard() { w_.end(); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Watchdog& w_;
  };

 private:
  using Clock = std::chrono::steady_clock;
  void begin(const char* what) {
    std::lock_guard lock(mutex_);
    what_ = what;
    since_ = Clock::now();
  }
  void end() {
    std::lock_guard lock(mutex_);
    what_ = nullptr;
  }
  void watch() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (!what_) continue;
      const double waited = std::chrono::duration<double>(Clock::now() - since_).count();
      if (waited <= timeout_s_) continue;
      std::fprintf(stderr,
                   "orion: error (rank %d of %d): waited %.0f s in %s for the other ranks (--rank-timeout %.0f): a rank "
                   "has hung or is far slower; ending the job\n",
                   rank_, size_, waited, what_, timeout_s_);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }

  int rank_, size_;
  double timeout_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const char* what_ = nullptr;
  Clock::time_point since_;
  bool stop_ = false;
  std::thread thread_;
};

class MpiCollective final : public Collective {
 public:
  explicit MpiCollective(double timeout_s) {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      // One thread at a time calls MPI (a server's decoding thread for a pipeline, the main thread
      // otherwise); OpenMP's threads never do.
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      if (provided < MPI_THREAD_SERIALIZED) throw Error("MPI: this library cannot be called from more than one thread");
    }
    // Errors come back as codes and become orion::Error, which ends the job (abort_job_if_ranked).
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    watchdog_ = std::make_unique<Watchdog>(rank_, size_, timeout_s);
  }
  ~MpiCollective() override {
    watchdog_.reset();
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void sum(std::span<float> values) override { ordered(values, MPI_FLOAT); }
  void sum(std::span<double> values) override { ordered(values, MPI_DOUBLE); }
  void broadcast(std::span<std::byte> bytes, int root) override {
    const Watchdog::Guard waiting(*watchdog_, "a broadcast");
    check(MPI_Bcast(bytes.data(), count(bytes.size()), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void barrier() override {
    const Watchdog::Guard waiting(*watchdog_, "a barrier");
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  }
  void send(std::span<const std::byte> bytes, int to) override {
    const Watchdog::Guard waiting(*watchdog_, "a send to the next stage");
    check(MPI_Send(bytes.data(), count(bytes.size()), MPI_BYTE, to, kMessageTag, MPI_COMM_WORLD), "MPI_Send");
  }
  void receive(std::span<std::byte> bytes, int from, Wait wait) override {
    MPI_Status status;
    if (wait == Wait::work) {
      const Watchdog::Guard waiting(*watchdog_, "a receive from another stage");
      check(MPI_Recv(bytes.data(), count(bytes.size()), MPI_BYTE, from, kMessageTag, MPI_COMM_WORLD, &status), "MPI_Recv");
    } else {
      // Polled with short sleeps: MPI_Recv spins a core for as long as it waits.
      MPI_Request request;
      check(MPI_Irecv(bytes.data(), count(bytes.size()), MPI_BYTE, from, kMessageTag, MPI_COMM_WORLD, &request), "MPI_Irecv");
      for (int done = 0;;) {
        check(MPI_Test(&request, &done, &status), "MPI_Test");
        if (done) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (static_cast<std::size_t>(got) != bytes.size())
      throw Error("MPI: rank " + std::to_string(from) + " sent " + std::to_string(got) + " bytes where " +
                  std::to_string(bytes.size()) + " were expected (the ranks run different versions or options?)");
  }
  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "orion: error (rank %d of %d): %s\n", rank_, size_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }
  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    v = v.substr(0, v.find_first_of(",\n"));
    return "MPI (" + v + "), " + std::to_string(size_) + " ranks";
  }

 private:
  static int count(std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw Error("MPI: " + std::to_string(n) + " values in one message, more than MPI's int counts hold");
    return static_cast<int>(n);
  }

  template <class T>
  void ordered(std::span<T> values, MPI_Datatype type) {
    if (size_ == 1) return;
    const Watchdog::Guard waiting(*watchdog_, "a sum");
    const auto n = static_cast<std::int64_t>(values.size());
    count(values.size());
    std::vector<int> send_counts(size_), send_at(size_), recv_counts(size_), recv_at(size_);
    const Piece mine = piece_of(n, size_, rank_);
    const int len = static_cast<int>(mine.end - mine.begin);
    for (int k = 0; k < size_; ++k) {
      const Piece p = piece_of(n, size_, k);
      send_counts[k] = static_cast<int>(p.end - p.begin);
      send_at[k] = static_cast<int>(p.begin);
      recv_counts[k] = len;
      recv_at[k] = k * len;
    }
    std::vector<T> parts(static_cast<std::size_t>(len) * static_cast<std::size_t>(size_));
    check(MPI_Alltoallv(values.data(), send_counts.data(), send_at.data(), type, parts.data(), recv_counts.data(),
                        recv_at.data(), type, MPI_COMM_WORLD),
          "MPI_Alltoallv");
    std::vector<T> reduced(static_cast<std::size_t>(len));
    add_in_rank_order<T>(parts, size_, reduced);
    check(MPI_Allgatherv(reduced.data(), len, type, values.data(), send_counts.data(), send_at.data(), type,
                         MPI_COMM_WORLD),
          "MPI_Allgatherv");
  }

  static constexpr int kMessageTag = 7;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Collective> mpi_collective(double timeout_s) { return std::make_unique<MpiCollective>(timeout_s); }

#else

std::unique_ptr<Collective> mpi_collective(double) { return nullptr; }

#endif

}  // namespace orion::dist
