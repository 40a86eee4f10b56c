/**
 * On-demand layer data: chunked, content-addressed layers in shared storage (directory, S3, HTTP), fetched lazily through FUSE. Filled by the on-demand images issue; the layer seam it plugs into is io.dsec.spi.LayerStore in dsec-core.
 */
package io.dsec.image;
