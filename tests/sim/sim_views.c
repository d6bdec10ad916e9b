/* The record of every rendezvous view any simulated node takes, and the checks the rendezvous' promises are
 * stated with: no two different views of one lineage at one epoch (safety), how many view changes, how long
 * a commit took, and whether the cluster has converged on one view. */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous/rdv_view.h"

void ftl_sim_record_view(ftl_sim *sim, int i)
{
	const ftl_rdv *r = ftl_node_rdv(sim->nodes[i].node);
	const ftl_rdv_view *v = ftl_rdv_current(r);
	if (sim->n_records == sim->cap_records) {
		sim->cap_records = sim->cap_records ? 2 * sim->cap_records : 256;
		sim->records = realloc(sim->records, (size_t)sim->cap_records * sizeof(*sim->records));
		if (!sim->records)
			abort();
	}
	sim->nodes[i].view_digest = rdv_view_digest(v);
	ftl_sim_record *rec = &sim->records[sim->n_records++];
	*rec = (ftl_sim_record){.at_us = sim->now, .node = i, .epoch = v->epoch, .lineage = v->lineage,
				.digest = sim->nodes[i].view_digest, .n = v->n, .rank = ftl_rdv_rank(r)};
	snprintf(rec->rank0, sizeof(rec->rank0), "%s", v->n > 0 ? v->members[0].name : "");
}

const ftl_sim_record *ftl_sim_records(const ftl_sim *sim, int *n)
{
	*n = sim->n_records;
	return sim->records;
}

/* True when no record before i holds the same view (epoch and digest). O(i). */
static bool is_first_of_its_view(const ftl_sim *sim, int i)
{
	for (int j = 0; j < i; j++)
		if (sim->records[j].epoch == sim->records[i].epoch && sim->records[j].digest == sim->records[i].digest)
			return false;
	return true;
}

int ftl_sim_conflicts(const ftl_sim *sim)
{
	int conflicts = 0;
	for (int i = 0; i < sim->n_records; i++) {
		const ftl_sim_record *a = &sim->records[i];
		if (!is_first_of_its_view(sim, i))
			continue;
		for (int j = 0; j < i; j++) {
			const ftl_sim_record *b = &sim->records[j];
			if (b->epoch == a->epoch && b->lineage == a->lineage && b->digest != a->digest) {
				printf("sim: CONFLICT at epoch %llu: %s holds %u members led by %s, %s holds %u led by %s\n",
				       (unsigned long long)a->epoch, sim->nodes[a->node].name, a->n, a->rank0,
				       sim->nodes[b->node].name, b->n, b->rank0);
				conflicts++;
				break;
			}
		}
	}
	return conflicts;
}

int ftl_sim_lineages(const ftl_sim *sim)
{
	int n = 0;
	for (int i = 0; i < sim->n_records; i++) {
		bool is_new = true;
		for (int j = 0; j < i && is_new; j++)
			is_new = sim->records[j].lineage != sim->records[i].lineage;
		n += is_new;
	}
	return n;
}

int ftl_sim_epochs_since(const ftl_sim *sim, int64_t t_us)
{
	int n = 0;
	for (int i = 0; i < sim->n_records; i++) {
		bool is_new = sim->records[i].at_us >= t_us;
		for (int j = 0; j < i && is_new; j++)
			is_new = sim->records[j].epoch != sim->records[i].epoch;
		n += is_new;
	}
	return n;
}

int64_t ftl_sim_first_taken(const ftl_sim *sim, uint64_t epoch)
{
	for (int i = 0; i < sim->n_records; i++)
		if (sim->records[i].epoch == epoch)
			return sim->records[i].at_us;
	return -1;
}

int64_t ftl_sim_all_members_took(ftl_sim *sim, uint64_t epoch)
{
	int64_t last = -1;
	for (int i = 0; i < sim->n_nodes; i++) {
		const ftl_rdv *r = ftl_sim_rdv(sim, i);
		if (!r || ftl_rdv_rank(r) < 0 || ftl_rdv_current(r)->epoch != epoch)
			continue;
		for (int k = sim->n_records - 1; k >= 0; k--) {
			if (sim->records[k].node == i && sim->records[k].epoch == epoch) {
				last = sim->records[k].at_us > last ? sim->records[k].at_us : last;
				break;
			}
		}
	}
	return last;
}

int64_t ftl_sim_last_membership_change(const ftl_sim *sim, int observer)
{
	return sim->nodes[observer].membership_changed_us;
}

/* Every member of v runs, in the generation named. O(view). */
static bool is_all_up(const ftl_sim *sim, const ftl_rdv_view *v)
{
	for (uint32_t k = 0; k < v->n; k++) {
		int i = ftl_sim_index_of_name(sim, v->members[k].name);
		if (i < 0 || !sim->nodes[i].node || sim->nodes[i].generation != v->members[k].generation)
			return false;
	}
	return true;
}

bool ftl_sim_converged(ftl_sim *sim)
{
	const ftl_rdv_view *first = NULL;
	uint64_t digest = 0;
	for (int i = 0; i < sim->n_nodes; i++) {
		const ftl_rdv *r = ftl_sim_rdv(sim, i);
		if (!r)
			continue;
		ftl_rdv_phase p = ftl_rdv_get_phase(r);
		if (ftl_rdv_current(r)->epoch == 0 || (p != FTL_RDV_TRAINING && p != FTL_RDV_SPARE))
			return false;
		if (first && sim->nodes[i].view_digest != digest)
			return false;
		if (!first) {
			first = ftl_rdv_current(r);
			digest = sim->nodes[i].view_digest;
		}
	}
	return first && is_all_up(sim, first);
}

int64_t ftl_sim_run_until_converged(ftl_sim *sim, int64_t limit_us)
{
	int64_t start = sim->now;
	while (sim->now - start <= limit_us) {
		if (ftl_sim_converged(sim))
			return sim->now - start;
		ftl_sim_run_for(sim, 10000);
	}
	return -1;
}
