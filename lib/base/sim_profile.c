/* SPDX-License-Identifier: MIT */
/*
 * sim_profile.c — the hardware profiles of the simulated GPU.
 *
 * Each row is one device the simulator can be.  Every figure carries its
 * source or is marked as an estimate, because planners plan with these
 * numbers and a benchmark is only as honest as its inputs.  Units: GB/s is
 * 1e9 bytes/s and TFLOPS is 1e12 flop/s, as vendors quote them.
 *
 * Capacity is the nominal memory size read as binary units (16 GB ->
 * 16 GiB), which is the physical HBM/GDDR on these boards.  A real device
 * reports somewhat less through cudaMemGetInfo (an A100 40GB reports
 * 42405855232 bytes total, PC2 wiki "NVIDIA A100 40GB with NVLINK"
 * deviceQuery), and a CUDA context takes a few hundred MiB more; the
 * budget tunable, not the profile, is where that headroom belongs.
 *
 * Host<->device link figures: the P100's are measured (Microway,
 * "Tesla P100 PCI-E 16GB up close", bandwidthTest, pinned, 32 MiB), and
 * so are the H100 SXM5's, with its managed-memory paths, on the machine
 * this project was run on (docs/gpu-h100.md), the H200's on the one lent
 * since (docs/gpu-h200-goals.md), and the K40's (Microway,
 * bandwidthTest, below).  The other PCIe 3.0 x16
 * boards are given the same figures; PCIe 4.0 and 5.0
 * double the signalling rate per generation with the same 128b/130b
 * encoding, so those links get 2x and 4x the P100 measurement — estimates,
 * which keep the measured ratio of achieved to raw rate (~74% H2D, ~82%
 * D2H of 15.75 GB/s).
 *
 * Unified memory: 2 MiB VA blocks, 64 KiB big pages and 256 faults per
 * batch are the nvidia-uvm driver's (open-gpu-kernel-modules:
 * uvm_va_block_types.h UVM_VA_BLOCK_BITS 21, UVM_MIN_BIG_PAGE_SIZE,
 * uvm_gpu_replayable_faults.c uvm_perf_fault_batch_count).  No
 * authoritative per-fault or per-batch latency is published, so those, and
 * the fault-path migration rate, are estimates (see the UVM_* defines).
 * So is the rate of remote access to host-resident managed pages (mapped
 * over the bus, not migrated): kernels read host memory in small,
 * scattered transactions that reach well under the DMA engines' rate.
 * docs/uvm-model.md describes how the simulator uses each figure.
 *
 * Network (issue 26): each profile names the link its collectives cross
 * and the rate one rank sends at (net_gbps).  A PCIe board's collectives
 * leave through PCIe, to a NIC or, between the GPUs of one host, to a
 * peer, so their rate is the lower of the NIC's and the PCIe link's, and
 * they share that link with the swap engine's copies (net_over_pcie).
 * An SXM board talks to its peers over NVLink, apart from PCIe.  NIC
 * rates are the InfiniBand generations' per-port signalling rates, read
 * as bytes (1 Gb/s = 0.125 GB/s); the fixed cost of one collective has
 * no published figure that fits a profile and is an estimate
 * (NET_LATENCY_*).  docs/sim-network.md says how sim_network.c uses them.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "managed_page.h"
#include "sim_profile.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* nvidia-uvm: UVM_VA_BLOCK_BITS 21 and UVM_MIN_BIG_PAGE_SIZE, the 64 KiB
 * big page (managed_page.h, which the runtime's managed arena aligns
 * to). */
#define UVM_BLOCK_BYTES ((uint64_t)TMM_MANAGED_BLOCK)
#define UVM_PAGE_BYTES ((uint64_t)TMM_MANAGED_PAGE)
/* nvidia-uvm: uvm_perf_fault_batch_count default 256. */
#define UVM_FAULT_BATCH 256
/*
 * estimate: fixed cost of servicing one fault batch (fetch the fault
 * buffer, sort, replay), 20 us.  Kim et al. (ASPLOS'20, "Batch-aware
 * unified memory management") show batch processing, not the transfer,
 * dominates; they publish no single figure that fits a profile.
 */
#define UVM_BATCH_NS 20000
/* estimate: per-fault work inside a batch (lookup, map, TLB), 1 us. */
#define UVM_FAULT_NS 1000
/*
 * estimate: remote (zero-copy) access reaches a third of the pinned copy
 * rate; kernels read host memory in 32-128 byte transactions over the
 * bus, not in the copy engines' large bursts.  No measurement at hand.
 */
#define UVM_REMOTE_FRACTION (1.0 / 3)

/*
 * estimate: a 10 us fixed cost per copy (cudaMemcpyAsync issue plus DMA
 * setup), small against the MiB-sized swaps the runtime issues.
 */
#define COPY_LATENCY_NS 10000
/* estimate: 5 us per op for kernel launch and its gaps. */
#define LAUNCH_NS 5000
/*
 * estimate: a typical training op (convolution, GEMM, elementwise) reaches
 * about 60% of the relevant peak.  No per-device measurement is at hand, so
 * every profile uses the same figure.
 */
#define EFFICIENCY 0.6

/* The figures every profile shares: the estimates above and the UVM
 * driver's constants, which do not depend on the GPU. */
#define SHARED_FIGURES                             \
	.copy_latency_ns = COPY_LATENCY_NS,        \
	.launch_ns = LAUNCH_NS,                    \
	.efficiency = EFFICIENCY,                  \
	.uvm_block_bytes = UVM_BLOCK_BYTES,        \
	.uvm_page_bytes = UVM_PAGE_BYTES,          \
	.uvm_fault_batch = UVM_FAULT_BATCH,        \
	.uvm_batch_ns = UVM_BATCH_NS,              \
	.uvm_fault_ns = UVM_FAULT_NS

/*
 * estimate: the fixed cost of one collective: its launch, the ring's
 * handshakes and the first hop's latency.  Through a NIC, 20 us; between
 * the GPUs of one NVLink node, 10 us.  Per collective, not per ring step:
 * the op's cost hint does not say how many ranks take part.
 */
#define NET_LATENCY_NIC_NS 20000
#define NET_LATENCY_NVLINK_NS 10000
/* InfiniBand per-port rates as GB/s: FDR 4x 56 Gb/s signalling, 54.5 Gb/s
 * of data after 64b/66b (Mellanox ConnectX-3 product brief); EDR 100 Gb/s
 * (ConnectX-4); HDR 200 Gb/s (ConnectX-6); NDR 400 Gb/s (NVIDIA
 * ConnectX-7 product brief). */
#define IB_FDR_GBPS (54.54 / 8)
#define IB_EDR_GBPS (100.0 / 8)
#define IB_HDR_GBPS (200.0 / 8)
#define IB_NDR_GBPS (400.0 / 8)
/* The slower of a NIC and the PCIe link in front of it. */
#define NET_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Microway bandwidthTest on a P100 PCIe 16GB, pinned, 32 MiB. */
#define PCIE3_H2D_GBPS 11.69
#define PCIE3_D2H_GBPS 12.9

/*
 * A board's host link, h2d and d2h GB/s, and the two managed-memory
 * rates every profile without its own measurement estimates from the
 * pinned host-to-device rate: fault-driven migration at half of it, and
 * remote access at UVM_REMOTE_FRACTION of it.
 */
#define HOST_LINK(h2d, d2h)                                \
	.h2d_gbps = (h2d), .d2h_gbps = (d2h),              \
	.uvm_fault_gbps = (h2d) / 2,                       \
	.uvm_remote_gbps = (h2d) * UVM_REMOTE_FRACTION

/* An SXM board's collectives: NVLink 4, 900 GB/s bidirectional per GPU
 * (NVIDIA H100 and H200 datasheets, SXM columns), 450 each way, to the 8
 * GPUs of an HGX node through NVSwitch; apart from PCIe.  Ranks beyond
 * one node would cross NDR (50 GB/s), which no profile models. */
#define NET_NVLINK4                                        \
	.net_link = "NVLink 4 through NVSwitch",           \
	.net_gbps = 450.0,                                 \
	.net_latency_ns = NET_LATENCY_NVLINK_NS,           \
	.net_over_pcie = false

/* Collectives that leave through the board's PCIe link (to a NIC, or to
 * a peer) at gbps, sharing it with the swap engine's copies. */
#define NET_THROUGH_PCIE(link, gbps)                       \
	.net_link = (link), .net_gbps = (gbps),            \
	.net_latency_ns = NET_LATENCY_NIC_NS, .net_over_pcie = true

static const struct tmm_sim_profile profiles[] = {
	{
		.name = "p100-pcie3-16g",
		.description = "NVIDIA Tesla P100 PCIe 16 GB",
		/* 16 GB HBM2 (NVIDIA via tech4gamers), as 16 GiB */
		.capacity = 16 * GIB,
		/* measured, Microway (see PCIE3_*) */
		HOST_LINK(PCIE3_H2D_GBPS, PCIE3_D2H_GBPS),
		/* 9.3 TFLOPS fp32, 18.7 fp16 (NVIDIA via tech4gamers) */
		.fp32_tflops = 9.3,
		.fp16_tflops = 18.7,
		/* 732 GB/s HBM2 (NVIDIA P100 datasheet via Microway) */
		.hbm_gbps = 732.0,
		SHARED_FIGURES,
		/* a PCIe node with one InfiniBand EDR NIC, the fabric of
		 * the P100's day: EDR's 12.5 GB/s is above PCIe 3.0's
		 * measured 11.69, so PCIe bounds it */
		NET_THROUGH_PCIE("InfiniBand EDR through PCIe 3.0",
				 NET_MIN(IB_EDR_GBPS, PCIE3_H2D_GBPS)),
	},
	{
		.name = "v100-pcie3-16g",
		.description = "NVIDIA Tesla V100 PCIe 16 GB",
		/* 16 GB HBM2 (NVIDIA V100 announcement via techrival) */
		.capacity = 16 * GIB,
		/* estimate: same PCIe 3.0 x16 link as the measured P100 */
		HOST_LINK(PCIE3_H2D_GBPS, PCIE3_D2H_GBPS),
		/*
		 * 14 TFLOPS fp32, 112 TFLOPS fp16 tensor core (NVIDIA V100
		 * datasheet, PCIe; 14.13 at 1380 MHz boost per sysrqmts)
		 */
		.fp32_tflops = 14.0,
		.fp16_tflops = 112.0,
		/* 900 GB/s HBM2 (NVIDIA V100 datasheet; 897 per sysrqmts) */
		.hbm_gbps = 900.0,
		SHARED_FIGURES,
		/* the PCIe V100 has no NVLink: as the P100, EDR through
		 * PCIe 3.0, bound by PCIe */
		NET_THROUGH_PCIE("InfiniBand EDR through PCIe 3.0",
				 NET_MIN(IB_EDR_GBPS, PCIE3_H2D_GBPS)),
	},
	{
		.name = "titanrtx-pcie3-24g",
		.description = "NVIDIA TITAN RTX 24 GB",
		/* 24 GB GDDR6 (Tom's Hardware launch table), as 24 GiB */
		.capacity = 24 * GIB,
		/* estimate: same PCIe 3.0 x16 link as the measured P100 */
		HOST_LINK(PCIE3_H2D_GBPS, PCIE3_D2H_GBPS),
		/*
		 * 16.3 TFLOPS fp32 (TSPLIT §VI-C; Tom's Hardware); 130 TFLOPS
		 * tensor "deep learning" (NVIDIA via HotHardware)
		 */
		.fp32_tflops = 16.3,
		.fp16_tflops = 130.0,
		/* 672 GB/s, 384-bit GDDR6 at 14 Gbps (Tom's Hardware) */
		.hbm_gbps = 672.0,
		SHARED_FIGURES,
		/* a workstation's cards reduce peer to peer over PCIe 3.0
		 * (its NVLink bridge pairs two cards only, so a 4- or
		 * 8-card box goes through PCIe): the PCIe figure */
		NET_THROUGH_PCIE("PCIe 3.0 peer to peer", PCIE3_H2D_GBPS),
	},
	{
		.name = "a100-pcie4-40g",
		.description = "NVIDIA A100 PCIe 40 GB",
		/* 40 GB HBM2 (NVIDIA A100 datasheet via PC2 wiki) */
		.capacity = 40 * GIB,
		/* estimate: PCIe 4.0 x16, 2x the P100 PCIe 3.0 measurement */
		HOST_LINK(2 * PCIE3_H2D_GBPS, 2 * PCIE3_D2H_GBPS),
		/*
		 * 19.5 TFLOPS fp32, 312 TFLOPS fp16 tensor, dense (NVIDIA A100
		 * datasheet via PC2 wiki and glennklockwood.com)
		 */
		.fp32_tflops = 19.5,
		.fp16_tflops = 312.0,
		/* 1555 GB/s HBM2 (NVIDIA A100 datasheet via PC2 wiki) */
		.hbm_gbps = 1555.0,
		SHARED_FIGURES,
		/* the PCIe A100's NIC of its day is HDR (25 GB/s), above
		 * PCIe 4.0's estimated 23.4: PCIe bounds it */
		NET_THROUGH_PCIE("InfiniBand HDR through PCIe 4.0",
				 NET_MIN(IB_HDR_GBPS, 2 * PCIE3_H2D_GBPS)),
	},
	{
		.name = "h100-pcie5-80g",
		.description = "NVIDIA H100 PCIe 80 GB",
		/* 80 GB HBM2e (NVIDIA H100 PCIe product brief PB-11133) */
		.capacity = 80 * GIB,
		/* estimate: PCIe 5.0 x16, 4x the P100 PCIe 3.0 measurement */
		HOST_LINK(4 * PCIE3_H2D_GBPS, 4 * PCIE3_D2H_GBPS),
		/*
		 * 51 TFLOPS fp32; 756 TFLOPS fp16 tensor dense (1,513 with
		 * sparsity, halved) (NVIDIA H100 spec table via HPC Tech)
		 */
		.fp32_tflops = 51.0,
		.fp16_tflops = 756.0,
		/* 2000 GB/s HBM2e (NVIDIA H100 PCIe product brief) */
		.hbm_gbps = 2000.0,
		SHARED_FIGURES,
		/* NDR, 400 Gb/s per port (50 GB/s), above PCIe 5.0's
		 * estimated 46.8: PCIe bounds it */
		NET_THROUGH_PCIE("InfiniBand NDR through PCIe 5.0",
				 NET_MIN(IB_NDR_GBPS, 4 * PCIE3_H2D_GBPS)),
	},
	{
		/*
		 * The card libtensormm was first run on: an H100 SXM5 (it
		 * names itself "H100 80GB HBM3") on a PCIe Gen5 x16 host
		 * link.  Every link and managed-memory figure is measured
		 * there, at 1 GiB (docs/gpu-h100.md); the fault-path rates
		 * are what is left of a measured time once this profile's
		 * fault and batch costs are taken out of it, so that the
		 * whole path costs what was measured.
		 */
		.name = "h100-sxm5-pcie5-80g",
		.description = "NVIDIA H100 SXM5 80 GB on PCIe Gen5",
		/* 80 GB HBM3 (NVIDIA H100 datasheet), as 80 GiB */
		.capacity = 80 * GIB,
		/* measured: pinned cudaMemcpy, 2 GiB in 64 MiB pieces */
		.h2d_gbps = 52.1,
		.d2h_gbps = 54.9,
		/* 67 TFLOPS fp32, 989 TFLOPS fp16 tensor dense (NVIDIA
		 * H100 datasheet, SXM5 column) */
		.fp32_tflops = 67.0,
		.fp16_tflops = 989.0,
		/* 3.35 TB/s HBM3 (NVIDIA H100 datasheet, SXM5 column) */
		.hbm_gbps = 3350.0,
		SHARED_FIGURES,
		NET_NVLINK4,
		/* measured: a kernel faulting 1 GiB in from the host moves
		 * 8.1 GB/s, 133 ms; less 16,384 faults and 64 batches
		 * (17.7 ms) leaves 115 ms of transfer */
		.uvm_fault_gbps = 9.35,
		/* estimate: see UVM_REMOTE_FRACTION */
		.uvm_remote_gbps = 52.1 * UVM_REMOTE_FRACTION,
		/* measured: cudaMallocManaged + first kernel touch + free
		 * of 1 GiB takes 146 ms against 2.18 ms for cudaMalloc;
		 * less the faults (17.7 ms) leaves 126 ms */
		.uvm_first_touch_gbps = 8.51,
		/* measured: prefetch of 1 GiB, host to device and back */
		.uvm_prefetch_h2d_gbps = 49.3,
		.uvm_prefetch_d2h_gbps = 8.7,
		/* measured: managed + prefetch to the device before the
		 * first kernel, 1 GiB: 14.1 ms against 2.18 ms */
		.uvm_prefetch_fresh_gbps = 90.0,
		/* estimate: an eviction under oversubscription is the
		 * driver's migration to the host, measured by prefetch.
		 * The GPU's passive uvm run suggests it was faster there
		 * (docs/gpu-h100.md); no figure says by how much. */
		.uvm_evict_gbps = 8.7,
	},
	{
		/*
		 * The card lent twice since (docs/gpu-h200.md,
		 * docs/gpu-h200-goals.md): an H200 naming itself "NVIDIA
		 * H200" (the SXM part; the PCIe card is the "H200 NVL"),
		 * 143771 MiB, on a PCIe Gen5 x16 host link.  The link and
		 * managed prefetch figures are measured there; the fault
		 * path and first touch were not, and are the H100 SXM5's,
		 * measured on the same kind of link and driver.  Same
		 * GH100 die and clocks as the H100 SXM5, so the same
		 * arithmetic rates; HBM3e in place of HBM3.
		 */
		.name = "h200-sxm-pcie5-141g",
		.description = "NVIDIA H200 SXM 141 GB on PCIe Gen5",
		/* 141 GB HBM3e (NVIDIA H200 datasheet), as 141 GiB */
		.capacity = 141 * GIB,
		/* measured: pinned cudaMemcpyAsync of 256 MiB, best of 3,
		 * 55.2-55.5 GB/s each way at each run's start; the copy-
		 * way steps fit 55.3 (docs/gpu-h200-goals.md) */
		.h2d_gbps = 55.3,
		.d2h_gbps = 55.3,
		/* 67 TFLOPS fp32, 989 TFLOPS fp16 tensor dense (1,979
		 * with sparsity, halved) (NVIDIA H200 datasheet, SXM
		 * column) */
		.fp32_tflops = 67.0,
		.fp16_tflops = 989.0,
		/* 4.8 TB/s HBM3e (NVIDIA H200 datasheet) */
		.hbm_gbps = 4800.0,
		SHARED_FIGURES,
		NET_NVLINK4,
		/* the H100 SXM5's (not measured here) */
		.uvm_fault_gbps = 9.35,
		/* estimate: see UVM_REMOTE_FRACTION */
		.uvm_remote_gbps = 55.3 * UVM_REMOTE_FRACTION,
		/* the H100 SXM5's (not measured here) */
		.uvm_first_touch_gbps = 8.51,
		/* measured at each context's open (lib/backend/
		 * cuda_link.c, 32 MiB): prefetch to the device 31.6
		 * GB/s, to the host 9.3-10.5, fresh pages made by a
		 * prefetch 31.6 (docs/gpu-h200.md) */
		.uvm_prefetch_h2d_gbps = 31.6,
		.uvm_prefetch_d2h_gbps = 9.9,
		.uvm_prefetch_fresh_gbps = 31.6,
		/* estimate: an eviction is the driver's migration to the
		 * host, as measured by prefetch */
		.uvm_evict_gbps = 9.9,
	},
	{
		/*
		 * SuperNeurons' GPU (PPoPP'18, Tables 4 and 5: "a 12GB
		 * NVIDIA K40", a K40c in its abstract; the K40c and the
		 * K40m are the same GK110B board, actively and passively
		 * cooled).  Kepler has no fp16 arithmetic, so fp16 runs at
		 * the fp32 rate; nor has it demand paging (its unified
		 * memory moves every managed page at each kernel launch),
		 * so mode=uvm on this profile imitates a driver the K40
		 * never had, with the estimates every profile shares.
		 */
		.name = "k40-pcie3-12g",
		.description = "NVIDIA Tesla K40 12 GB",
		/* 12 GB GDDR5 (NVIDIA Tesla K40 board specification
		 * BD-06902-001_v05), as 12 GiB; with ECC on, as the board
		 * ships, ~11.25 GB of it is usable (same document): a
		 * budget, not the profile, takes that off */
		.capacity = 12 * GIB,
		/* measured: Microway, "NVIDIA Tesla K40 Atlas GPU
		 * Accelerator (Kepler GK110b) Up Close", bandwidthTest,
		 * pinned, 32 MiB, on a K40m: 10038.7 and 10046.7 MB/s, read
		 * as GB/s the way PCIE3_* reads Microway's P100 figures */
		HOST_LINK(10.04, 10.05),
		/* 4.29 TFLOPS fp32 at the 745 MHz base clock the boards
		 * ship at: 2880 cores x 2 flop x 745 MHz (board
		 * specification BD-06902-001_v05; 4.29 also in NVIDIA's
		 * launch figures via geektopia.es).  No fp16 units: the
		 * fp32 rate. */
		.fp32_tflops = 4.29,
		.fp16_tflops = 4.29,
		/* 288 GB/s GDDR5, 384-bit (Microway, same article) */
		.hbm_gbps = 288.0,
		SHARED_FIGURES,
		/* FDR InfiniBand, the K40's contemporary: 54.5 Gb/s of
		 * data (6.8 GB/s), below its measured PCIe rate: the NIC
		 * bounds it, and the collective still crosses PCIe */
		NET_THROUGH_PCIE("InfiniBand FDR through PCIe 3.0",
				 NET_MIN(IB_FDR_GBPS, 10.04)),
	},
};

#define NPROFILES (sizeof(profiles) / sizeof(profiles[0]))

const struct tmm_sim_profile *tmm_sim_profile_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < NPROFILES; i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

const struct tmm_sim_profile *tmm_sim_profiles(size_t *n)
{
	if (n)
		*n = NPROFILES;
	return profiles;
}

/*
 * Nanoseconds to an integer, rounded to nearest.  Durations are summed on
 * uint64_t timelines, so a NaN or negative input (a bad cost hint) must not
 * wrap around; it counts as zero.
 */
static uint64_t ns_round(double ns)
{
	if (!(ns > 0))
		return 0;
	if (ns >= 1.8e19)
		return UINT64_MAX;
	return (uint64_t)llround(ns);
}

uint64_t tmm_sim_op_ns(const struct tmm_sim_profile *p, double flops,
		       double bytes)
{
	double compute_ns, memory_ns, ns, eff;

	if (!p)
		return 0;
	if (!(flops > 0))
		flops = 0;
	if (!(bytes > 0))
		bytes = 0;
	/* flop / (TFLOPS * 1e12 flop/s) s = flop / (TFLOPS * 1e3) ns */
	compute_ns = flops / (p->fp32_tflops * 1e3);
	/* B / (GB/s * 1e9 B/s) s = B / (GB/s) ns */
	memory_ns = bytes / p->hbm_gbps;
	ns = compute_ns > memory_ns ? compute_ns : memory_ns;
	eff = p->efficiency > 0 && p->efficiency <= 1 ? p->efficiency : 1;
	return ns_round(ns / eff) + p->launch_ns;
}

uint64_t tmm_sim_net_ns(const struct tmm_sim_profile *p, double net_bytes)
{
	if (!p || !(net_bytes > 0) || !(p->net_gbps > 0))
		return 0;
	/* B / (GB/s) = ns, as for copies */
	return p->net_latency_ns + ns_round(net_bytes / p->net_gbps);
}

uint64_t tmm_sim_copy_ns(const struct tmm_sim_profile *p, uint64_t bytes,
			 int to_device)
{
	double gbps;

	if (!p)
		return 0;
	gbps = to_device ? p->h2d_gbps : p->d2h_gbps;
	return p->copy_latency_ns + ns_round((double)bytes / gbps);
}
