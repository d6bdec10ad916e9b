/* bench_comm_mpi: the same measurement as bench_comm_tcp with MPI_Allreduce (f32 sum, out of place, the
 * sizes and iteration counts of bench_comm.h), as the reference. Run it with
 * mpirun --allow-run-as-root --oversubscribe -np N bench_comm_mpi [label [max bytes]]. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "bench_comm.h"

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	const char *label = argc > 1 ? argv[1] : "mpi";
	size_t n_sizes = bench_comm_n_sizes(argc > 2 ? argv[2] : NULL);
	if (n_sizes == 0)
		MPI_Abort(MPI_COMM_WORLD, 2);
	size_t max = bench_comm_sizes[n_sizes - 1];
	float *send = malloc(max), *recv = malloc(max);
	if (send == NULL || recv == NULL)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (size_t i = 0; i < max / 4; i++)
		send[i] = (float)(i % 7);
	memset(recv, 0, max);
	for (size_t s = 0; s < n_sizes; s++) {
		size_t bytes = bench_comm_sizes[s];
		int iters = bench_comm_iters(bytes);
		for (int i = 0; i < BENCH_COMM_WARMUP; i++)
			MPI_Allreduce(send, recv, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(send, recv, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t = MPI_Wtime() - t0;
		if (rank == 0)
			bench_comm_print(label, n, bytes, iters, t);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
