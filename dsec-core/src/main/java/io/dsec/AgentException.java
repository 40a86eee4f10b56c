package io.dsec;

/** The in-sandbox agent could not be reached, broke the protocol, or the sandbox died under it. */
public class AgentException extends DsecException {
    private static final long serialVersionUID = 1L;

    public AgentException(String message) {
        super(message);
    }

    public AgentException(String message, Throwable cause) {
        super(message, cause);
    }
}
