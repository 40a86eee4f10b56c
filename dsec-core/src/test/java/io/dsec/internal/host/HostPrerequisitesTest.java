package io.dsec.internal.host;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dsec.MissingPrerequisiteException;
import org.junit.jupiter.api.Test;

class HostPrerequisitesTest {
    @Test
    void notRootIsRefusedWithTheFix() {
        assertThatThrownBy(() -> HostPrerequisites.requireRoot(false))
            .isInstanceOf(MissingPrerequisiteException.class)
            .hasMessageContaining("dsec needs root").hasMessageContaining("Run the JVM as root");
        assertThatCode(() -> HostPrerequisites.requireRoot(true)).doesNotThrowAnyException();
    }
}
