# `cmake --install BUILD --prefix P` of libgpumpi for users (docs/library.md, "Install"): P/lib/libgpumpi.so*,
# P/include/gpumpi.h, P/lib/cmake/gpumpi/ (find_package(gpumpi): target gpumpi::gpumpi, which brings MPI::MPI_C of
# the MPI this build used) and P/lib/pkgconfig/gpumpi.pc. The library is built against ONE MPI (its ABI: Open MPI and
# MPICH differ), so install each flavour into its own prefix; both files name the MPI they were built with.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS gpumpi EXPORT gpumpiTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/gpumpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT gpumpiTargets NAMESPACE gpumpi:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpumpi)

# Which MPI: the compiler wrapper CMake found (mpicc.openmpi / mpicc.mpich) and the pkg-config module of that MPI.
get_filename_component(GPUMPI_MPICC_NAME "${MPI_C_COMPILER}" NAME)
if(MPI_C_LIBRARY_VERSION_STRING MATCHES "MPICH" OR GPUMPI_MPICC_NAME MATCHES "mpich")
  set(GPUMPI_MPI_FLAVOUR mpich)
  set(GPUMPI_MPI_PC mpich)
else()
  set(GPUMPI_MPI_FLAVOUR openmpi)
  set(GPUMPI_MPI_PC ompi-c)
endif()

configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpumpiConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/gpumpiConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpumpi)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gpumpiConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gpumpiConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/gpumpiConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpumpi)

file(RELATIVE_PATH GPUMPI_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" GPUMPI_PC_TO_PREFIX_NOSLASH "${GPUMPI_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/gpumpi.pc.in ${CMAKE_CURRENT_BINARY_DIR}/gpumpi.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gpumpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
