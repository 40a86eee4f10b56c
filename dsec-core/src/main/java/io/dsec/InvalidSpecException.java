package io.dsec;

/** A builder or spec was given a value it cannot take; the message names the field, the value and the fix. */
public class InvalidSpecException extends DsecException {
    private static final long serialVersionUID = 1L;
    private final String field;

    public InvalidSpecException(String field, Object value, String fix) {
        super(field + " = " + value + " is invalid: " + fix);
        this.field = field;
    }

    /** The name of the field that was rejected. */
    public String field() {
        return field;
    }
}
