#pragma once
// The collectives data-parallel training needs, behind one interface so that the transport can be
// replaced (a ring over TCP later): MPI is what ships (mpi_collective.cpp, over Open MPI); one
// process alone is the local collective. Every sum adds the ranks' parts in rank order, whatever
// the transport's own algorithms do, so a job gives the same bits from run to run at the same
// number of ranks (ordered_sum.h).
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace orion::dist {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `values` become the elementwise sum over the ranks, rank 0's part first.
  virtual void sum(std::span<float> values) = 0;
  virtual void sum(std::span<double> values) = 0;
  // Rank `root`'s bytes to every rank (the same count on each).
  virtual void broadcast(std::span<std::byte> bytes, int root) = 0;
  virtual void barrier() = 0;
  // Point to point, for a pipeline's stages (engine/pipeline.h): `bytes` to rank `to`; and from
  // rank `from` into `bytes`, which must be the count it sent (else orion::Error). Messages
  // from one rank to another arrive in the order they were sent. Wait::idle is a wait for the
  // next piece of work, which may be long (a server between requests): it is not held to the
  // rank timeout, and it polls gently instead of spinning.
  enum class Wait { work, idle };
  virtual void send(std::span<const std::byte> bytes, int to) = 0;
  virtual void receive(std::span<std::byte> bytes, int from, Wait wait = Wait::work) = 0;
  // Ends every rank of the job with exit status 1, after printing `why` with this rank's number:
  // for a rank that cannot go on while the others wait in a collective.
  [[noreturn]] virtual void abort(const std::string& why) = 0;
  // The transport and the job's size, for messages ("MPI (Open MPI v4.1.4), 2 ranks").
  virtual std::string describe() const = 0;
};

// One process: a sum is the values themselves.
std::unique_ptr<Collective> local_collective();

// Whether the environment says mpirun (or another PMI launcher) started this process as one of
// several ranks.
bool launched_as_rank();

// The job this process is part of: MPI's when launched as a rank (MPI is initialised on the first
// call and finalised at exit), else one process. A collective that waits longer than `timeout_s`
// for the other ranks (a rank hung) ends the job, saying so (0: never). Throws orion::Error when
// launched as a rank by a build without MPI.
inline constexpr double kDefaultRankTimeout = 1800;
std::shared_ptr<Collective> job_collective(double timeout_s = kDefaultRankTimeout);

// When this process is one rank of several and the job's collective exists: `why` printed with
// the rank and every rank ended (a command's error must not leave the others waiting). Returns
// otherwise.
void abort_job_if_ranked(const std::string& why);

}  // namespace orion::dist
