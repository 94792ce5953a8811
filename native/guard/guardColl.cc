// Collectives' buffers (count, bytes, class per buffer; dangers with peer null) and the calls that carry buffers
// but are not modelled: they pass straight through and are counted under "unsupported".
// "bytes" per collective call, per rank: Bcast / Reduce / Allreduce: count × type size; Reduce_scatter(_block):
// this rank's share of the result; Allgather(v) / Gather(v): this rank's contribution; Alltoall(v): all this rank
// sends; Scatter(v): at the root all it sends, elsewhere the part it receives.
#include <cstring>

#include "guardHandlers.gen.hh"
#include "guardState.hh"

namespace gpumpi::guard {
namespace {

void buffer(CallId c, const void* buf, uint64_t bytes, void* ra) {
	if (!buf || buf == MPI_IN_PLACE || bytes == 0) return;
	Cls cls = classify(buf, bytes);
	st().coll[c].cls[cls]++;
	checkDanger(c, -1, bytes, cls, buf, ra, false);
}

int commSize(MPI_Comm comm) {
	int n = 0;
	PMPI_Comm_size(comm, &n);
	return n;
}
int commRank(MPI_Comm comm) {
	int r = -1;
	PMPI_Comm_rank(comm, &r);
	return r;
}
uint64_t sumBytes(const int* counts, int n, MPI_Datatype type) {
	uint64_t total = 0;
	for (int i = 0; counts && i < n; ++i) total += typeBytes(counts[i], type);
	return total;
}

/** Times `run` and counts the collective with its bytes. */
template <typename Run>
int timed(CallId c, uint64_t bytes, Run run) {
	uint64_t t = nowNs();
	int rc = run();
	Lock l;
	addCall(c, bytes, nowNs() - t);
	st().coll[c].count++;
	st().coll[c].bytes += bytes;
	return rc;
}

}  // namespace
}  // namespace gpumpi::guard

using namespace gpumpi::guard;

int gpumpi::guard::on_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bytes = typeBytes(count, type);
		buffer(C_Bcast, buf, bytes, ra);
	}
	return timed(C_Bcast, bytes, [&] { return PMPI_Bcast(buf, count, type, root, comm); });
}
int gpumpi::guard::on_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bytes = typeBytes(count, type);
		buffer(C_Reduce, sbuf, bytes, ra);
		if (commRank(comm) == root) buffer(C_Reduce, rbuf, bytes, ra);
	}
	return timed(C_Reduce, bytes, [&] { return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm); });
}
int gpumpi::guard::on_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bytes = typeBytes(count, type);
		buffer(C_Allreduce, sbuf, bytes, ra);
		buffer(C_Allreduce, rbuf, bytes, ra);
	}
	return timed(C_Allreduce, bytes, [&] { return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm); });
}
int gpumpi::guard::on_Allgather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bytes = sbuf == MPI_IN_PLACE ? typeBytes(rcount, rtype) : typeBytes(scount, stype);
		buffer(C_Allgather, sbuf, bytes, ra);
		buffer(C_Allgather, rbuf, typeBytes(rcount, rtype) * uint64_t(commSize(comm)), ra);
	}
	return timed(C_Allgather, bytes, [&] { return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm); });
}
int gpumpi::guard::on_Allgatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype,
                             MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		int me = commRank(comm);
		bytes = sbuf == MPI_IN_PLACE ? (rcounts && me >= 0 ? typeBytes(rcounts[me], rtype) : 0) : typeBytes(scount, stype);
		buffer(C_Allgatherv, sbuf, bytes, ra);
		buffer(C_Allgatherv, rbuf, sumBytes(rcounts, commSize(comm), rtype), ra);
	}
	return timed(C_Allgatherv, bytes, [&] { return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm); });
}
int gpumpi::guard::on_Alltoall(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		uint64_t n = uint64_t(commSize(comm));
		bytes = (sbuf == MPI_IN_PLACE ? typeBytes(rcount, rtype) : typeBytes(scount, stype)) * n;
		buffer(C_Alltoall, sbuf, bytes, ra);
		buffer(C_Alltoall, rbuf, typeBytes(rcount, rtype) * n, ra);
	}
	return timed(C_Alltoall, bytes, [&] { return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm); });
}
int gpumpi::guard::on_Alltoallv(const void* sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void* rbuf, const int rcounts[],
                            const int rdispls[], MPI_Datatype rtype, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		int n = commSize(comm);
		bytes = sbuf == MPI_IN_PLACE ? sumBytes(rcounts, n, rtype) : sumBytes(scounts, n, stype);
		buffer(C_Alltoallv, sbuf, bytes, ra);
		buffer(C_Alltoallv, rbuf, sumBytes(rcounts, n, rtype), ra);
	}
	return timed(C_Alltoallv, bytes, [&] { return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm); });
}
int gpumpi::guard::on_Gather(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bool isRoot = commRank(comm) == root;
		bytes = sbuf == MPI_IN_PLACE ? typeBytes(rcount, rtype) : typeBytes(scount, stype);
		buffer(C_Gather, sbuf, bytes, ra);
		if (isRoot) buffer(C_Gather, rbuf, typeBytes(rcount, rtype) * uint64_t(commSize(comm)), ra);
	}
	return timed(C_Gather, bytes, [&] { return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm); });
}
int gpumpi::guard::on_Gatherv(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype,
                          int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		int me = commRank(comm);
		bool isRoot = me == root;
		bytes = sbuf == MPI_IN_PLACE ? (isRoot && rcounts ? typeBytes(rcounts[me], rtype) : 0) : typeBytes(scount, stype);
		buffer(C_Gatherv, sbuf, bytes, ra);
		if (isRoot) buffer(C_Gatherv, rbuf, sumBytes(rcounts, commSize(comm), rtype), ra);
	}
	return timed(C_Gatherv, bytes, [&] { return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm); });
}
int gpumpi::guard::on_Scatter(const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bool isRoot = commRank(comm) == root;
		uint64_t all = typeBytes(scount, stype) * uint64_t(commSize(comm));
		bytes = isRoot ? all : typeBytes(rcount, rtype);
		if (isRoot) buffer(C_Scatter, sbuf, all, ra);
		buffer(C_Scatter, rbuf, typeBytes(rcount, rtype), ra);
	}
	return timed(C_Scatter, bytes, [&] { return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm); });
}
int gpumpi::guard::on_Scatterv(const void* sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void* rbuf, int rcount, MPI_Datatype rtype,
                           int root, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bool isRoot = commRank(comm) == root;
		uint64_t all = isRoot ? sumBytes(scounts, commSize(comm), stype) : 0;
		bytes = isRoot ? all : typeBytes(rcount, rtype);
		if (isRoot) buffer(C_Scatterv, sbuf, all, ra);
		buffer(C_Scatterv, rbuf, typeBytes(rcount, rtype), ra);
	}
	return timed(C_Scatterv, bytes, [&] { return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm); });
}
int gpumpi::guard::on_Reduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		int me = commRank(comm);
		bytes = rcounts && me >= 0 ? typeBytes(rcounts[me], type) : 0;
		buffer(C_Reduce_scatter, sbuf, sumBytes(rcounts, commSize(comm), type), ra);
		buffer(C_Reduce_scatter, rbuf, bytes, ra);
	}
	return timed(C_Reduce_scatter, bytes, [&] { return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm); });
}
int gpumpi::guard::on_Reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm, void* ra) {
	uint64_t bytes = 0;
	{
		Lock l;
		bytes = typeBytes(rcount, type);
		buffer(C_Reduce_scatter_block, sbuf, bytes * uint64_t(commSize(comm)), ra);
		buffer(C_Reduce_scatter_block, rbuf, bytes, ra);
	}
	return timed(C_Reduce_scatter_block, bytes, [&] { return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm); });
}
