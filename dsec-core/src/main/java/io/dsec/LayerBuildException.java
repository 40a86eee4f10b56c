package io.dsec;

/** A layer could not be built or stored. */
public class LayerBuildException extends DsecException {
    private static final long serialVersionUID = 1L;

    public LayerBuildException(String message) {
        super(message);
    }

    public LayerBuildException(String message, Throwable cause) {
        super(message, cause);
    }
}
