package io.dsec.internal.layer;

import io.dsec.DsecException;

/** A layer could not be mounted or unmounted; the message says what to check. */
public final class LayerMountException extends DsecException {
    private static final long serialVersionUID = 1L;

    public LayerMountException(String message) {
        super(message);
    }

    public LayerMountException(String message, Throwable cause) {
        super(message, cause);
    }
}
