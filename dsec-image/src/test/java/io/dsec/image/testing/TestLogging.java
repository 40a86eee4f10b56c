package io.dsec.image.testing;

import java.lang.reflect.Method;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * s3proxy brings logback to the test classpath, which wins over slf4j-simple and, without a configuration, logs
 * everything at DEBUG (the AWS SDK and Jetty write hex dumps of every body). Tests that use S3 call {@link #quiet()}.
 * Reflective, so it compiles and does nothing once logback is gone from the classpath.
 */
public final class TestLogging {
    private TestLogging() {
    }

    /** Root at INFO; s3proxy, Jetty and the AWS SDK at WARN. Does nothing under another SLF4J provider. */
    public static void quiet() {
        Object factory = LoggerFactory.getILoggerFactory();
        if (!factory.getClass().getName().equals("ch.qos.logback.classic.LoggerContext")) {
            return;
        }
        try {
            Class<?> level = Class.forName("ch.qos.logback.classic.Level", true, factory.getClass().getClassLoader());
            Method getLogger = factory.getClass().getMethod("getLogger", String.class);
            set(getLogger.invoke(factory, Logger.ROOT_LOGGER_NAME), level, "INFO");
            for (String noisy : new String[] {"org.gaul", "software.amazon", "org.eclipse.jetty"}) {
                set(getLogger.invoke(factory, noisy), level, "WARN");
            }
        } catch (ReflectiveOperationException e) {
            // leave logging as it is
        }
    }

    private static void set(Object logger, Class<?> level, String name) throws ReflectiveOperationException {
        logger.getClass().getMethod("setLevel", level).invoke(logger, level.getField(name).get(null));
    }
}
