/**
 * MicroVM backends (QEMU over QMP, cloud-hypervisor over its REST API) running the same Sandbox API. Filled by the microVM issue.
 */
package io.dsec.vmm;
