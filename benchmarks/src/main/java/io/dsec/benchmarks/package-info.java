/** Benchmarks: JMH for hot paths, macro harnesses for bursts and memory; each writes benchmarks/results/NAME.json. */
package io.dsec.benchmarks;
