package io.dsec;

/**
 * The one unchecked exception dsec throws. Each kind of failure has its own subclass; every message says
 * what went wrong and what to do about it.
 */
public class DsecException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DsecException(String message) {
        super(message);
    }

    public DsecException(String message, Throwable cause) {
        super(message, cause);
    }
}
