"""The detector's vocabulary, importable without NumPy, SciPy or OpenCV (the CLI's parser names it)."""

#: Tag families by name → OpenCV's predefined dictionary name (``cv2.aruco.DICT_*``).
FAMILIES = {"36h11": "DICT_APRILTAG_36h11", "36h10": "DICT_APRILTAG_36h10", "25h9": "DICT_APRILTAG_25h9",
            "16h5": "DICT_APRILTAG_16h5"}
#: The detector's corner refinements (:class:`~sim2real.vision.detect.TagDetector`), the default first.
CORNER_REFINEMENTS = ("edges", "subpix", "apriltag", "none")
