package io.dsec;

/** Layer data could not be fetched from its store: unreachable, too slow, missing, or failing verification. */
public class ImageFetchException extends DsecException {
    private static final long serialVersionUID = 1L;

    public ImageFetchException(String message) {
        super(message);
    }

    public ImageFetchException(String message, Throwable cause) {
        super(message, cause);
    }
}
