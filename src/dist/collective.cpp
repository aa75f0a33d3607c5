#include "dist/collective.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace orion::dist {

std::unique_ptr<Collective> mpi_collective(double timeout_s);  // mpi_collective.cpp; null without MPI

namespace {

class LocalCollective final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(std::span<float>) override {}
  void sum(std::span<double>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  void send(std::span<const std::byte>, int to) override { no_peer(to); }
  void receive(std::span<std::byte>, int from, Wait) override { no_peer(from); }
  [[noreturn]] void abort(const std::string& why) override {
    std::fprintf(stderr, "orion: error: %s\n", why.c_str());
    std::exit(1);
  }
  std::string describe() const override { return "one process"; }

 private:
  [[noreturn]] static void no_peer(int rank) {
    throw Error("one process has no rank " + std::to_string(rank) + " to pass a message to (start the job with mpirun)");
  }
};

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

std::mutex job_mutex;
std::shared_ptr<Collective> job;

}  // namespace

std::unique_ptr<Collective> local_collective() { return std::make_unique<LocalCollective>(); }

bool launched_as_rank() {
  // Open MPI's mpirun, and the PMI launchers of MPICH and Slurm.
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || env_int("PMIX_SIZE") > 1;
}

std::shared_ptr<Collective> job_collective(double timeout_s) {
  std::lock_guard lock(job_mutex);
  if (job) return job;
  if (launched_as_rank()) {
    std::unique_ptr<Collective> mpi = mpi_collective(timeout_s);
    if (!mpi)
      throw Error("this process is one of " + std::to_string(env_int("OMPI_COMM_WORLD_SIZE")) +
                  " ranks of an MPI job, but this orion was built without MPI (install Open MPI: Debian's "
                  "libopenmpi-dev, Homebrew's open-mpi; then rebuild)");
    job = std::move(mpi);
  } else {
    job = local_collective();
  }
  return job;
}

void abort_job_if_ranked(const std::string& why) {
  std::shared_ptr<Collective> j;
  {
    std::lock_guard lock(job_mutex);
    j = job;
  }
  if (j && j->size() > 1) j->abort(why);
}

}  // namespace orion::dist
